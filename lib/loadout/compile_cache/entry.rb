# frozen_string_literal: true

require "loadout/compile_cache/digest"

module Loadout
  module CompileCache
    # The value stored for one cached file, and the small stat record appended when a file is
    # revalidated (so the big payload is never rewritten).
    #
    #   entry (little endian):
    #   +--------+---------+-------+------+------+-------+-------+----------+-----+-----+
    #   | "LOce" | version | flags | 0 u16| size | mtime | ctime | verified | ino | dev |
    #   |   4    |  u8     |  u8   |      | i64  | ns i64| ns i64| ns i64   | u64 | u64 |
    #   +--------+---------+-------+------+------+-------+-------+----------+-----+-----+
    #   | source digest u64 | payload digest u64 | payload len u32 | path len u16 |
    #   | realpath len u16  | path bytes | realpath bytes | payload bytes            |
    #   +--------------------------------------------------------------------------+
    #
    # size/mtime/ctime/ino/dev are the source's stat when it was verified (taken before its
    # bytes were read), verified is the wall clock just after that stat, and the source digest
    # is XXH64 of the bytes that were compiled. The payload digest is checked before a payload
    # is used: the store's CRC protects the record, this protects against everything else (a
    # flipped bit in an ISeq blob can crash the VM, which has no verifier).
    #
    # Reading is lazy: a hit needs the stat fields and the payload; the source digest, the paths
    # and the realpath are only decoded when validation or relocation asks for them.
    #
    #   stat record: "LOcs" | version u8 | 3 zero bytes | size | mtime | ctime | verified | ino | dev | source digest
    class Entry # :nodoc:
      MAGIC = "LOce"
      STAT_MAGIC = "LOcs"
      LAYOUT = "a4CCx2q<q<q<q<Q<Q<Q<Q<L<S<S<"
      READ = "CCx2q<q<q<q<Q<Q<x16L<S<S<" # from offset 4: version .. dev, skip the digests, lengths
      HEAD = 80
      DIGEST_AT = 56
      PAYLOAD_DIGEST_AT = 64
      STAT_LAYOUT = "a4Cx3q<q<q<q<Q<Q<Q<"
      STAT_SIZE = 64

      # flags
      RAW = 0          # payload is the handler's own bytes (an ISeq binary)
      MSGPACK = 1
      MARSHAL = 2
      CODEC = 3        # mask for the three above
      NEGATIVE = 4     # nothing to serve: Ruby/Psych must do it (e.g. a syntax error); payload = reason
      FALLBACK = 8     # YAML: the document was empty, the caller's fallback: is the result
      PINNED_PATH = 16 # ISeq: the source contains its own path, so it cannot be relocated
      VERBOSE_WARNINGS = 32 # ISeq: compiling warns under -w; not served while $VERBOSE is true

      Stat = Struct.new(:size, :mtime, :ctime, :verified, :ino, :dev, :digest)

      class << self
        # Builds the stored bytes.
        #: (Integer, Array[Integer], Integer, Integer, String, ?path: String, ?realpath: String) -> String
        def dump(flags, identity, verified, digest, payload, path: "", realpath: "")
          path = path.b
          realpath = realpath.b
          size, mtime, ctime, ino, dev = identity
          head = [MAGIC, FORMAT_VERSION, flags, size, mtime, ctime, verified, ino, dev, digest,
                  Digest.xxh64(payload), payload.bytesize, path.bytesize, realpath.bytesize].pack(LAYOUT)
          head << path << realpath << payload.b
        end

        # Parses stored bytes; nil when they are not an intact entry (wrong magic or version,
        # lengths that do not add up, or a payload whose digest does not match).
        #: (String) -> Entry?
        def load(blob)
          return nil unless blob.bytesize >= HEAD && blob.start_with?(MAGIC)

          fields = blob.unpack(READ, offset: 4)
          return nil unless fields[0] == FORMAT_VERSION

          payload_at = HEAD + fields[9] + fields[10]
          return nil unless payload_at + fields[8] == blob.bytesize
          return nil unless Digest.matches?(blob, payload_at, fields[8], PAYLOAD_DIGEST_AT)

          new(blob, fields)
        end

        def dump_stat(identity, verified, digest) #: (Array[Integer], Integer, Integer) -> String
          size, mtime, ctime, ino, dev = identity
          [STAT_MAGIC, FORMAT_VERSION, size, mtime, ctime, verified, ino, dev, digest].pack(STAT_LAYOUT)
        end

        def load_stat(blob) #: (String?) -> Stat?
          return nil unless blob && blob.bytesize == STAT_SIZE

          magic, version, *fields = blob.unpack(STAT_LAYOUT)
          return nil unless magic == STAT_MAGIC && version == FORMAT_VERSION

          Stat.new(*fields)
        end
      end

      def initialize(blob, fields)
        @blob = blob
        _, @flags, @size, @mtime, @ctime, @verified, @ino, @dev, @payload_len, @path_len, @realpath_len = fields
      end

      attr_reader :flags, :size, :mtime, :ctime, :verified, :ino, :dev

      def digest
        @blob.unpack1("Q<", offset: DIGEST_AT)
      end

      def payload
        @blob.byteslice(HEAD + @path_len + @realpath_len, @payload_len)
      end

      def path
        @blob.byteslice(HEAD, @path_len).force_encoding(Encoding::UTF_8)
      end

      def realpath
        @blob.byteslice(HEAD + @path_len, @realpath_len).force_encoding(Encoding::UTF_8)
      end

      # Whether the entry was compiled at +path+ (compared without building the stored path).
      def compiled_at?(path) #: (String) -> bool
        return false unless path.bytesize == @path_len

        if path.ascii_only?
          @blob.index(path, HEAD) == HEAD
        else
          @blob.byteslice(HEAD, @path_len) == path.b
        end
      end

      def codec
        @flags & CODEC
      end

      def negative?
        (@flags & NEGATIVE) != 0
      end
    end
  end
end

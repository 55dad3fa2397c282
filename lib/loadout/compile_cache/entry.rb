# frozen_string_literal: true

module Loadout
  module CompileCache
    # The value stored for one cached file, and the small stat record appended when a file is
    # revalidated (so the big payload is never rewritten).
    #
    #   entry (little endian): the payload first, the head last
    #   +---------------+------------+----------------+------------------------------+
    #   | payload bytes | path bytes | realpath bytes | head (HEAD = 72 bytes)       |
    #   +---------------+------------+----------------+------------------------------+
    #   head:
    #   +--------+---------+-------+------+------+-------+-------+----------+-----+-----+
    #   | "LOce" | version | flags | 0 u16| size | mtime | ctime | verified | ino | dev |
    #   |   4    |  u8     |  u8   |      | i64  | ns i64| ns i64| ns i64   | u64 | u64 |
    #   +--------+---------+-------+------+------+-------+-------+----------+-----+-----+
    #   | source digest u64 | payload len u32 | path len u16 | realpath len u16 |
    #   +-------------------+-----------------+--------------+------------------+
    #
    # The payload comes first so that a hit needs no copy: the store reads an entry's bytes
    # straight into the String it returns, and once judged the String is cut to the payload's
    # length in place (Freshness), which is then the ISeq binary load_from_binary takes.
    #
    # size/mtime/ctime/ino/dev are the source's stat when it was verified (taken before its
    # bytes were read), verified is the wall clock just after that stat, and the source digest
    # is XXH64 of the bytes that were compiled. An entry has no checksum of its own: every entry
    # is read through a CRC32C frame (a store record, the self cache file) that covers all of its
    # bytes and is checked on the read that returns them, which is what keeps a flipped bit from
    # reaching load_from_binary (the VM has no verifier).
    #
    # Reading is lazy: a hit needs the stat fields and the payload; the source digest, the paths
    # and the realpath are only decoded when validation or relocation asks for them.
    #
    #   stat record: "LOcs" | version u8 | 3 zero bytes | size | mtime | ctime | verified | ino | dev | source digest
    class Entry # :nodoc:
      MAGIC = "LOce"
      STAT_MAGIC = "LOcs"
      LAYOUT = "a4CCx2q<q<q<q<Q<Q<Q<L<S<S<" # the head
      READ = "CCx2q<q<q<q<Q<Q<x8L<S<S<" # from the head's byte 4: version .. dev, skip the digest, lengths
      HEAD = 72 # the head's size; offsets below are within it
      DIGEST_AT = 56
      STAT_LAYOUT = "a4Cx3q<q<q<q<Q<Q<Q<"
      STAT_SIZE = 64

      # flags
      RAW = 0          # payload is the handler's own bytes (an ISeq binary)
      MSGPACK = 1
      MARSHAL = 2
      CODEC = 3        # mask for the three above
      NEGATIVE = 4     # nothing to serve: Ruby/the library must do it (a syntax error, a value that
      #                  cannot be stored); payload = reason
      FALLBACK = 8     # YAML: the document was empty, the caller's fallback: is the result
      PINNED_PATH = 16 # ISeq: the source contains its own path, so it cannot be relocated
      VERBOSE_WARNINGS = 32 # ISeq: compiling warns under -w; not served while $VERBOSE is true
      TAG_FREE = 64 # YAML: no node of the source has a tag (YAMLTags), so Psych's tag tables cannot matter

      Stat = Struct.new(:size, :mtime, :ctime, :verified, :ino, :dev, :digest)

      # (hot path: see ARCHITECTURE.md)
      @version = FORMAT_VERSION
      @native = BACKEND == :native ? Native : nil
      @binary = Encoding::BINARY
      @string = String
      @layout = LAYOUT
      @magic = MAGIC

      class << self
        # +str+ as it may join binary bytes: itself when binary or ASCII-only (no copy: a cold
        # boot dumps every file it compiles), else a binary copy.
        def bytes(str) #: (String) -> String
          str.encoding == @binary || str.ascii_only? ? str : str.b
        end

        # Builds the stored bytes.
        #: (Integer, Array[Integer], Integer, Integer, String, ?path: String, ?realpath: String) -> String
        def dump(flags, identity, verified, digest, payload, path: "", realpath: "")
          path = bytes(path)
          realpath = bytes(realpath)
          payload = bytes(payload)
          size, mtime, ctime, ino, dev = identity
          # Sized once: a capture's payload is copied into it, once (a cold boot dumps every file).
          # (72 is HEAD.)
          out = @string.new(capacity: 72 + path.bytesize + realpath.bytesize + payload.bytesize, encoding: @binary)
          out << payload << path << realpath
          [@magic, @version, flags, size, mtime, ctime, verified, ino, dev, digest,
           payload.bytesize, path.bytesize, realpath.bytesize].pack(@layout, buffer: out)
        end

        # Where the head of stored bytes starts, or nil when they are too short or do not end
        # with an entry's head.
        #: (String) -> Integer?
        def head_at(blob)
          at = blob.bytesize - 72 # HEAD
          # "LOce", byte by byte (no String made: the pure backend judges every file with this)
          return nil unless at >= 0 && blob.getbyte(at) == 76 && blob.getbyte(at + 1) == 79 &&
                            blob.getbyte(at + 2) == 99 && blob.getbyte(at + 3) == 101

          at
        end

        # The source digest recorded in stored entry bytes, or nil when they are not an entry.
        #: (String) -> Integer?
        def source_digest(blob)
          head = head_at(blob) or return nil

          blob.unpack1("Q<", offset: head + DIGEST_AT)
        end

        # The flags of stored entry bytes (0 when they are not an entry).
        #: (String) -> Integer
        def flags_of(blob)
          head = head_at(blob)
          head ? blob.getbyte(head + 5) : 0
        end

        # Parses stored bytes; nil when they are not an entry (wrong magic or +version+, lengths
        # that do not add up).
        #: (String, ?Integer) -> Entry?
        def load(blob, version = @version)
          head = head_at(blob) or return nil
          # A literal stands for READ (hot path: see ARCHITECTURE.md).
          fields = blob.unpack("CCx2q<q<q<q<Q<Q<x8L<S<S<", offset: head + 4)
          return nil unless fields[0] == version
          return nil unless fields[8] + fields[9] + fields[10] == head

          new(blob, fields, head)
        end

        # Literals stand for STAT_MAGIC and STAT_LAYOUT (a CI boot appends one record per file).
        #: (Array[Integer], Integer, Integer, ?Integer) -> String
        def dump_stat(identity, verified, digest, version = @version)
          size, mtime, ctime, ino, dev = identity
          ["LOcs", version, size, mtime, ctime, verified, ino, dev, digest].pack("a4Cx3q<q<q<q<Q<Q<Q<")
        end

        def load_stat(blob, version = @version) #: (String?, ?Integer) -> Stat?
          return nil unless blob.is_a?(String) && blob.bytesize == STAT_SIZE

          magic, stored_version, *fields = blob.unpack(STAT_LAYOUT)
          return nil unless magic == STAT_MAGIC && stored_version == version

          Stat.new(*fields)
        end
      end

      def initialize(blob, fields, head)
        @blob = blob
        @head = head
        _, @flags, @size, @mtime, @ctime, @verified, @ino, @dev, @payload_len, @path_len, @realpath_len = fields
      end

      attr_reader :flags, :size, :mtime, :ctime, :verified, :ino, :dev

      def digest
        @blob.unpack1("Q<", offset: @head + DIGEST_AT)
      end

      def payload
        @blob.byteslice(0, @payload_len)
      end

      def path
        @blob.byteslice(@payload_len, @path_len).force_encoding(Encoding::UTF_8)
      end

      def realpath
        @blob.byteslice(@payload_len + @path_len, @realpath_len).force_encoding(Encoding::UTF_8)
      end

      # Whether the entry was compiled at +path+ (compared without building the stored path).
      def compiled_at?(path) #: (String) -> bool
        return false unless path.bytesize == @path_len

        if path.ascii_only?
          @blob.index(path, @payload_len) == @payload_len
        else
          @blob.byteslice(@payload_len, @path_len) == path.b
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

# frozen_string_literal: true

require_relative "../native"
# The Ruby twins, loaded only where they run (tests load them on both backends): a native boot
# would otherwise compile 5 KB of Ruby it never calls.
unless Loadout::BACKEND == :native
  require_relative "crc32c"
  require_relative "ruby_format"
end

module Loadout
  class Store
    # The on-disk record layout (diagram in ext/loadout/store.h) and the functions that build and
    # read it. Each function is the native one (Loadout::Native.store_*) or its Ruby twin below,
    # picked once at load time; both produce identical bytes and results.
    #
    #   magic D5 4C | version u8 | flags u8 | klen u32 | vlen u32 | hdr crc u32 | body crc u32 | key | value
    #
    # hdr crc = crc32c(bytes 0..11); body crc = crc32c(key + value, seed: hdr crc). The separate
    # header CRC lets a reader trust a length (skip one bad body) or resync past a bad header.
    module Format # :nodoc:
      FORMAT_VERSION = 1 # bump on ANY change to the record layout; the first 16 bytes stay put
      MAGIC = "\xD5\x4C".b.freeze
      HEADER = 20
      PUT = 0
      DELETE = 1
      META = 2
      # Limits and the index value (packed = (record length << OFFSET_BITS) | offset), exactly as
      # ext/loadout/store.h defines them: test/store/limits_test.rb checks the header, this file
      # and Native::STORE_LIMITS against each other.
      MAX_KEY = 1 << 20       # 1 MiB
      MAX_VALUE = 64 << 20    # 64 MiB
      LENGTH_BITS = 27        # records up to 128 MiB - 1
      OFFSET_BITS = 37        # logs up to 128 GiB
      MAX_LOG = 1 << OFFSET_BITS
      OFFSET_MASK = MAX_LOG - 1
      MAX_RECORD = HEADER + MAX_KEY + MAX_VALUE
      # The hint file (layout in ext/loadout/store.h); its version is the magic's last byte.
      HINT_MAGIC = "LOHINT\x00\x02".b.freeze
      HINT_HEADER = 112
      # After the magic: log id, dev, ino, covered end, last record's offset, hdr crc and body crc,
      # count, swept (KiB, Compaction#due), then the five KeyMap counters.
      HINT_FIELDS = "a16Q<Q<Q<Q<VVVVQ<Q<Q<Q<Q<"
      # Key of the meta record that opens every store file. Its value: the file's size right after
      # its first write or the compaction that made it (u64), then the log id (16 random bytes,
      # new for every file, which the hint names). Files written before the log id existed have the
      # size only (no id: no hint ever matches them, and their first write compacts them).
      FILE_HEADER_KEY = "loadout.store".b.freeze
      LOG_ID_SIZE = 16
      FILE_HEADER_SIZE = HEADER + FILE_HEADER_KEY.bytesize + 8 + LOG_ID_SIZE
      # For the methods a cold boot calls once per file (hot path: see ARCHITECTURE.md)
      @max_key = MAX_KEY
      @max_value = MAX_VALUE

      module_function

      if BACKEND == :native
        def crc32c(str, seed = 0)
          Native.store_crc32c(str, seed)
        end

        def frame_into(buf, flags, key, value)
          Native.store_frame_into(buf, flags, key, value)
        end

        def frame_id_into(buf, flags, id, value)
          Native.store_frame_id_into(buf, flags, id, value)
        end

        def parse(buf, base)
          Native.store_parse(buf, base)
        end

        def verify(rec, key)
          Native.store_verify(rec, key)
        end

        def hint_parse(buf)
          Native.store_hint_parse(buf)
        end

        # [fields, table] where table answers #lookup(key), #size and #to_h; nil when damaged.
        def hint_table(buf)
          Native::HintTable.load(buf)
        end

        # fdatasync(2) from C without the GVL; any error raises and is final for that file.
        def fdatasync(io)
          Native.store_fdatasync(io.fileno)
        end
      else
        # The twins live in ruby_format.rb as ruby_* functions (tests call them on both backends).
        def crc32c(str, seed = 0)
          CRC32C.crc32c(str, seed)
        end

        def frame_into(buf, flags, key, value)
          ruby_frame_into(buf, flags, key, value)
        end

        def frame_id_into(buf, flags, id, value)
          ruby_frame_into(buf, flags, [id].pack("Q>"), value)
        end

        def parse(buf, base)
          RubyParser.new(buf, base).run
        end

        def verify(rec, key)
          ruby_verify(rec, key)
        end

        def hint_parse(buf)
          ruby_hint_parse(buf)
        end

        def hint_table(buf)
          fields, map = ruby_hint_parse(buf)
          fields && [fields, RubyHintTable.new(map)]
        end

        # IO#fsync raises on error (unlike IO#fdatasync, which retries with fsync and can hide EIO).
        def fdatasync(io)
          io.fsync
          nil
        end
      end

      def file_header(baseline, id)
        frame_into(String.new(encoding: Encoding::BINARY), META, FILE_HEADER_KEY, [baseline, id].pack("Q<a16"))
      end

      # [baseline, log id] from the file header at the start of +bytes+: [0, nil] when there is
      # none, [baseline, nil] for a header of an older loadout (the baseline only).
      def read_header(bytes)
        entries, = parse(bytes, 0)
        return [0, nil] unless entries[0] == META && entries[1] == FILE_HEADER_KEY

        value = bytes.byteslice(HEADER + FILE_HEADER_KEY.bytesize, entries[3] - HEADER - FILE_HEADER_KEY.bytesize)
        return [0, nil] if value.bytesize < 8

        baseline, id = value.unpack("Q<a16")
        [baseline, value.bytesize == 8 + LOG_ID_SIZE ? id : nil]
      end

      # [record length, hdr crc, body crc] of the record whose first HEADER bytes are +bytes+,
      # when they are a valid header (magic, header CRC, this version, limits); else nil.
      def record_header(bytes)
        return nil unless bytes.bytesize == HEADER && bytes.start_with?(MAGIC)

        _, version, flags, klen, vlen, hcrc, bcrc = bytes.unpack("a2CCVVVV")
        return nil unless crc32c(bytes.byteslice(0, 12)) == hcrc && version == FORMAT_VERSION && flags <= META
        return nil unless klen <= MAX_KEY && vlen <= MAX_VALUE

        [HEADER + klen + vlen, hcrc, bcrc]
      end

      # True when a record of +reclen+ bytes at +off+ is within the limits (so it packs losslessly).
      def locatable?(off, reclen)
        reclen >= HEADER && reclen <= MAX_RECORD && off <= MAX_LOG - reclen
      end

      def within_limits?(klen, vlen)
        klen <= @max_key && vlen <= @max_value
      end

      def check_lengths(klen, vlen)
        raise ArgumentError, "key is #{klen} bytes; the limit is #{MAX_KEY}" if klen > MAX_KEY
        raise ArgumentError, "value is #{vlen} bytes; the limit is #{MAX_VALUE}" if vlen > MAX_VALUE
      end
    end
  end

  if BACKEND == :native
    module Native
      class HintTable # :nodoc:
        # Every entry as a Hash, in hint order (built only when the store needs all keys).
        def to_h
          Store::Format.hint_parse(bytes)[1]
        end
      end
    end
  end
end

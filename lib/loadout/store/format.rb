# frozen_string_literal: true

require "loadout/native"
# The Ruby twins, loaded only where they run (tests load them on both backends): a native boot
# would otherwise compile 5 KB of Ruby it never calls.
unless Loadout::BACKEND == :native
  require "loadout/store/crc32c"
  require "loadout/store/ruby_format"
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
      MAX_KEY = 1 << 20
      MAX_VALUE = 1 << 30
      OFFSET_BITS = 40 # index values pack (record length << 40) | offset
      OFFSET_MASK = (1 << OFFSET_BITS) - 1
      HINT_MAGIC = "LOHINT\x00\x01".b.freeze
      HINT_HEADER = 80
      HINT_FIELDS = "Q<Q<Q<VVQ<Q<Q<Q<Q<"
      # Key of the meta record that opens every store file (and Journal segment).
      FILE_HEADER_KEY = "loadout.store".b.freeze

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
        def crc32c(str, seed = 0)
          CRC32C.crc32c(str, seed)
        end

        def frame_into(buf, flags, key, value)
          raise TypeError, "no implicit conversion of #{value.class} into String" unless value.is_a?(String)

          check_lengths(key.bytesize, value.bytesize)
          head = [MAGIC, FORMAT_VERSION, flags, key.bytesize, value.bytesize].pack("a2CCVV")
          hcrc = CRC32C.crc32c(head)
          body = CRC32C.crc32c(value, CRC32C.crc32c(key, hcrc))
          buf << head << [hcrc, body].pack("VV") << key.b << value.b
        end

        def frame_id_into(buf, flags, id, value)
          frame_into(buf, flags, [id].pack("Q>"), value)
        end

        def parse(buf, base)
          RubyParser.new(buf, base).run
        end

        def verify(rec, key)
          n = rec.bytesize
          return nil if n < HEADER || header_state(rec, 0) != :ok
          _, _, flags, klen, vlen, hcrc, bcrc = rec.unpack("a2CCVVVV")
          return nil unless flags == PUT && klen == key.bytesize && HEADER + klen + vlen == n
          return nil unless rec.byteslice(HEADER, klen) == key.b
          return nil unless CRC32C.crc32c(rec.byteslice(HEADER, n - HEADER), hcrc) == bcrc

          rec.byteslice(HEADER + klen, vlen)
        end

        def hint_parse(buf)
          n = buf.bytesize
          return nil if n < HINT_HEADER + 4 || buf.byteslice(0, 8) != HINT_MAGIC
          return nil unless CRC32C.crc32c(buf.byteslice(0, n - 4)) == buf.byteslice(n - 4, 4).unpack1("V")

          dev, ino, covered, tail_crc, count, *stats = buf.byteslice(8, HINT_HEADER - 8).unpack(HINT_FIELDS)
          index = {}
          pos = HINT_HEADER
          last = n - 4
          count.times do
            return nil if last - pos < 16

            off, reclen, klen = buf.byteslice(pos, 16).unpack("Q<VV")
            return nil if klen > last - pos - 16

            index[buf.byteslice(pos + 16, klen).freeze] = (reclen << OFFSET_BITS) | off
            pos += 16 + klen
          end
          return nil unless pos == last

          [[dev, ino, covered, tail_crc, *stats], index]
        end

        def hint_table(buf)
          fields, map = hint_parse(buf)
          fields && [fields, RubyHintTable.new(map)]
        end

        # IO#fsync raises on error (unlike IO#fdatasync, which retries with fsync and can hide EIO).
        def fdatasync(io)
          io.fsync
          nil
        end
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

# frozen_string_literal: true

module Loadout
  class Store
    module Format # :nodoc:
      # The pure-Ruby twins of ext/loadout/store.c, used by Format when BACKEND is :ruby (tests
      # load this file on both backends and compare each twin with the native function).

      module_function

      # Twin of Native.store_frame_into.
      def ruby_frame_into(buf, flags, key, value)
        raise TypeError, "no implicit conversion of #{value.class} into String" unless value.is_a?(String)

        check_lengths(key.bytesize, value.bytesize)
        head = [MAGIC, FORMAT_VERSION, flags, key.bytesize, value.bytesize].pack("a2CCVV")
        hcrc = CRC32C.crc32c(head)
        body = CRC32C.crc32c(value, CRC32C.crc32c(key, hcrc))
        buf << head << [hcrc, body].pack("VV") << key.b << value.b
      end

      # Twin of Native.store_verify.
      def ruby_verify(rec, key)
        n = rec.bytesize
        return nil if n < HEADER || header_state(rec, 0) != :ok

        _, _, flags, klen, vlen, hcrc, bcrc = rec.unpack("a2CCVVVV")
        return nil unless flags == PUT && klen == key.bytesize && HEADER + klen + vlen == n
        return nil unless rec.byteslice(HEADER, klen) == key.b
        return nil unless CRC32C.crc32c(rec.byteslice(HEADER, n - HEADER), hcrc) == bcrc

        rec.byteslice(HEADER + klen, vlen)
      end

      # Twin of Native.store_hint_parse: [fields, {key => packed}], or nil when damaged.
      def ruby_hint_parse(buf)
        n = buf.bytesize
        return nil if n < HINT_HEADER + 4 || buf.byteslice(0, 8) != HINT_MAGIC
        return nil unless CRC32C.crc32c(buf.byteslice(0, n - 4)) == buf.byteslice(n - 4, 4).unpack1("V")

        id, dev, ino, covered, last_off, last_hcrc, last_bcrc, count, swept, *stats =
          buf.byteslice(8, HINT_HEADER - 8).unpack(HINT_FIELDS)
        index = {}
        pos = HINT_HEADER
        last = n - 4
        count.times do
          return nil if last - pos < 16

          off, reclen, klen = buf.byteslice(pos, 16).unpack("Q<VV")
          return nil if klen > last - pos - 16 || !locatable?(off, reclen)

          index[buf.byteslice(pos + 16, klen).freeze] = (reclen << OFFSET_BITS) | off
          pos += 16 + klen
        end
        return nil unless pos == last

        [[id, dev, ino, covered, last_off, last_hcrc, last_bcrc, *stats, swept], index]
      end

      # :ok, :newer or :bad for the 20-byte header at pos (the Ruby twin of store.c header_ok).
      def header_state(buf, pos)
        return :bad unless buf.getbyte(pos) == 0xD5 && buf.getbyte(pos + 1) == 0x4C

        head = buf.byteslice(pos, 16)
        _, version, flags, klen, vlen, hcrc = head.unpack("a2CCVVV")
        return :bad unless CRC32C.crc32c(head.byteslice(0, 12)) == hcrc
        return :newer if version > FORMAT_VERSION
        return :bad unless version == FORMAT_VERSION && flags <= META
        return :bad if klen > MAX_KEY || vlen > MAX_VALUE

        :ok
      end

      # Ruby twin of Native::HintTable: the parsed Hash behind the same three methods.
      class RubyHintTable # :nodoc:
        def initialize(map)
          @map = map
        end

        def lookup(key)
          @map[key]
        end

        def size
          @map.size
        end

        def to_h
          @map.dup
        end
      end

      # Ruby twin of lo_store_parse (see store.h for the rules it must match exactly).
      class RubyParser # :nodoc:
        def initialize(buf, base)
          @buf = buf.b
          @base = base
        end

        def run
          buf = @buf
          n = buf.bytesize
          entries = []
          pos = good = 0
          corrupt_records = corrupt_bytes = bad_records = bad_bytes = 0
          newer = false
          while pos + HEADER <= n
            state = Format.header_state(buf, pos)
            if state == :newer
              newer = true
              break
            elsif state == :bad
              nxt = resync(pos)
              bad_records += 1
              bad_bytes += nxt - pos
              pos = nxt
              next
            end
            _, _, flags, klen, vlen, hcrc, bcrc = buf.byteslice(pos, HEADER).unpack("a2CCVVVV")
            total = HEADER + klen + vlen
            break if total > n - pos || @base + pos + total > MAX_LOG

            if CRC32C.crc32c(buf.byteslice(pos + HEADER, klen + vlen), hcrc) != bcrc
              bad_records += 1
              bad_bytes += total
              pos += total
              next
            end
            corrupt_records += bad_records
            corrupt_bytes += bad_bytes
            bad_records = bad_bytes = 0
            entries.push(flags, buf.byteslice(pos + HEADER, klen).freeze, @base + pos, total)
            pos += total
            good = pos
          end
          [entries, @base + good, corrupt_records, corrupt_bytes, newer]
        end

        private

        def resync(pos)
          n = @buf.bytesize
          i = pos + 1
          while i + HEADER <= n
            hit = @buf.index("\xD5".b, i)
            break if hit.nil? || hit + HEADER > n
            return hit if Format.header_state(@buf, hit) != :bad

            i = hit + 1
          end
          n
        end
      end
    end
  end
end

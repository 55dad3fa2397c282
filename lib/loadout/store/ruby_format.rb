# frozen_string_literal: true

module Loadout
  class Store
    module Format # :nodoc:
      # The pure-Ruby twins of the record checks in ext/loadout/store.c, used by Format when
      # BACKEND is :ruby (header_state is also used by tests on both backends).
      module_function

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
            break if total > n - pos

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

# frozen_string_literal: true

module Loadout
  class Store
    # Pure-Ruby CRC-32C (Castagnoli), the twin of ext/loadout/crc32c.c.
    #
    # Slicing-by-8 over unpack("V*") words is the fastest of the Ruby forms tried (byte-at-a-time
    # is slower), and still orders of magnitude slower than the C path. The pure-Ruby backend
    # exists for machines without a compiler, so it pays that on every record it frames and on
    # every byte of a log scanned without a hint; the hint file keeps ordinary opens off that path.
    # We keep CRC-32C (not Zlib.crc32, which is fast in Ruby) because the native path gets the
    # SSE4.2 instruction for free and both backends must write identical bytes.
    module CRC32C # :nodoc:
      POLY = 0x82F63B78

      TABLES = begin
        t0 = Array.new(256) do |i|
          c = i
          8.times { c = c.odd? ? (c >> 1) ^ POLY : c >> 1 }
          c
        end
        tables = [t0]
        7.times do
          prev = tables.last
          tables << Array.new(256) { |i| t0[prev[i] & 0xff] ^ (prev[i] >> 8) }
        end
        tables.map(&:freeze).freeze
      end
      T0, T1, T2, T3, T4, T5, T6, T7 = TABLES

      # crc32c(str, seed) continues a running CRC: crc32c(b, crc32c(a)) == crc32c(a + b).
      #: (String, ?Integer) -> Integer
      def self.crc32c(str, seed = 0)
        crc = seed ^ 0xffffffff
        n = str.bytesize
        full = n & ~7
        if full > 0
          words = str.unpack("V#{full >> 2}")
          i = 0
          count = words.length
          while i < count
            lo = crc ^ words[i]
            hi = words[i + 1]
            crc = T7[lo & 0xff] ^ T6[(lo >> 8) & 0xff] ^ T5[(lo >> 16) & 0xff] ^ T4[lo >> 24] ^
                  T3[hi & 0xff] ^ T2[(hi >> 8) & 0xff] ^ T1[(hi >> 16) & 0xff] ^ T0[hi >> 24]
            i += 2
          end
        end
        if full < n
          str.byteslice(full, n - full).each_byte { |b| crc = T0[(crc ^ b) & 0xff] ^ (crc >> 8) }
        end
        crc ^ 0xffffffff
      end
    end
  end
end

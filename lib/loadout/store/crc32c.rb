# frozen_string_literal: true

module Loadout
  class Store
    # Pure-Ruby CRC-32C (Castagnoli), the twin of ext/loadout/crc32c.c, and on JRuby the JVM's.
    #
    # Slicing-by-8 over unpack("V*") words is the fastest of the Ruby forms tried (byte-at-a-time
    # is slower), and still orders of magnitude slower than the C path. The pure-Ruby backend
    # exists for machines without a compiler, so it pays that on every record it frames and on
    # every byte of a log scanned without a hint; the hint file keeps ordinary opens off that path.
    # We keep CRC-32C (not Zlib.crc32, which is fast in Ruby) because the native path gets the
    # SSE4.2 instruction for free and both backends must write identical bytes.
    #
    # JRuby has no extension but has java.util.zip.CRC32C (Java 9+), which .crc32c uses there:
    # interpreted, the slicing tables alone took longer to build than the rest of loadout's
    # setup, and every value read is checked. A Java CRC32C cannot start from a seed (the CRC so
    # far, which the store's framing continues from its header's), so a seeded call feeds it four
    # bytes first whose CRC is the seed (.forcing_bytes): the CRC of those bytes then the string
    # is the CRC of the string continued from the seed, the continuation property the C has too.
    module CRC32C # :nodoc:
      POLY = 0x82F63B78

      T0 = Array.new(256) do |i|
        c = i
        8.times { c = c.odd? ? (c >> 1) ^ POLY : c >> 1 }
        c
      end.freeze

      @tables = nil # T0..T7 for slicing-by-8, built on the first .ruby_crc32c
      @top_byte_index = nil # (.forcing_bytes)

      # The JVM's CRC32C class on JRuby with Java 9+, else nil.
      JAVA = if RUBY_ENGINE == "jruby"
               begin
                 require "java"
                 Java::JavaUtilZip::CRC32C
               rescue LoadError, NameError
                 nil
               end
             end

      class << self
        # crc32c(str, seed) continues a running CRC: crc32c(b, crc32c(a)) == crc32c(a + b).
        #: (String, ?Integer) -> Integer
        def crc32c(str, seed = 0)
          JAVA ? java_crc32c(str, seed) : ruby_crc32c(str, seed)
        end

        # The Ruby twin (slicing-by-8), on every engine.
        #: (String, ?Integer) -> Integer
        def ruby_crc32c(str, seed = 0)
          t0, t1, t2, t3, t4, t5, t6, t7 = @tables || slicing_tables
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
              crc = t7[lo & 0xff] ^ t6[(lo >> 8) & 0xff] ^ t5[(lo >> 16) & 0xff] ^ t4[lo >> 24] ^
                    t3[hi & 0xff] ^ t2[(hi >> 8) & 0xff] ^ t1[(hi >> 16) & 0xff] ^ t0[hi >> 24]
              i += 2
            end
          end
          if full < n
            str.byteslice(full, n - full).each_byte { |b| crc = t0[(crc ^ b) & 0xff] ^ (crc >> 8) }
          end
          crc ^ 0xffffffff
        end

        # Four bytes whose CRC-32C is +seed+. A reflected CRC register after four bytes is
        # T[i3] ^ T[i2] >> 8 ^ T[i1] >> 16 ^ T[i0] >> 24 for the table indexes i0..i3 the bytes
        # selected, whatever it started from, and each T entry's top byte names its index (the
        # top bytes of T0 are a permutation): the indexes are read off the target top byte
        # first, then each byte is the one that selects its index from the register so far.
        #: (Integer) -> String
        def forcing_bytes(seed)
          index = top_byte_index
          want = seed ^ 0xffffffff # the register whose CRC is the seed
          picks = Array.new(4)
          3.downto(0) do |k|
            picks[k] = index[want >> 24]
            want = ((want ^ T0[picks[k]]) << 8) & 0xffffffff
          end
          reg = 0xffffffff
          picks.map do |i|
            byte = (reg ^ i) & 0xff
            reg = (reg >> 8) ^ T0[i]
            byte
          end.pack("C4")
        end

        private

        def java_crc32c(str, seed)
          crc = JAVA.new
          crc.update(forcing_bytes(seed).to_java_bytes) unless seed.zero?
          crc.update(str.to_java_bytes)
          crc.value
        end

        def slicing_tables
          tables = [T0]
          7.times do
            prev = tables.last
            tables << Array.new(256) { |i| T0[prev[i] & 0xff] ^ (prev[i] >> 8) }.freeze
          end
          @tables = tables.freeze
        end

        def top_byte_index
          @top_byte_index ||= Array.new(256).tap { |index| T0.each_with_index { |t, i| index[t >> 24] = i } }.freeze
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../native"

module Loadout
  module CompileCache
    # XXH64 of source files: is this the content that was compiled (and of the strings variant
    # digests are made of). Native (ext/loadout/digest.c) or the Ruby twin
    # below, chosen once at load time; both give identical values.
    module XXH64 # :nodoc:
      SEED = 0
      MASK = 0xFFFF_FFFF_FFFF_FFFF
      P1 = 0x9E3779B185EBCA87
      P2 = 0xC2B2AE3D27D4EB4F
      P3 = 0x165667B19E3779F9
      P4 = 0x85EBCA77C2B2AE63
      P5 = 0x27D4EB2F165667C5

      @native = BACKEND == :native ? Native : nil # (hot path: see ARCHITECTURE.md)

      class << self
        if BACKEND == :native
          # XXH64 of +string+'s bytes.
          def digest(string, seed = SEED) #: (String, ?Integer) -> Integer
            @native.xxh64(string, seed)
          end

          # XXH64 of a file's bytes, nil when it cannot be read.
          def file(path, seed = SEED) #: (String, ?Integer) -> Integer?
            @native.file_xxh64(path, seed)
          end
        else
          def digest(string, seed = SEED)
            RubyXXH64.digest(string.b, seed)
          end

          # (A regular file only, opened non-blocking: a FIFO in its place never blocks a boot.)
          def file(path, seed = SEED)
            source = Trust.read_source(path)
            source && RubyXXH64.digest(source, seed)
          end
        end
      end

      # The Ruby twin of lo_xxh64 (see ext/loadout/digest.c for the algorithm in one paragraph).
      module RubyXXH64
        class << self
          def digest(bytes, seed)
            len = bytes.bytesize
            pos = 0
            if len >= 32
              v1 = (seed + P1 + P2) & MASK
              v2 = (seed + P2) & MASK
              v3 = seed
              v4 = (seed - P1) & MASK
              stripes = len / 32
              words = bytes.unpack("Q<#{stripes * 4}")
              i = 0
              while i < words.length
                v1 = round(v1, words[i])
                v2 = round(v2, words[i + 1])
                v3 = round(v3, words[i + 2])
                v4 = round(v4, words[i + 3])
                i += 4
              end
              pos = stripes * 32
              h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) & MASK
              h = merge(h, v1)
              h = merge(h, v2)
              h = merge(h, v3)
              h = merge(h, v4)
            else
              h = (seed + P5) & MASK
            end
            h = (h + len) & MASK

            while len - pos >= 8
              h ^= round(0, bytes.unpack1("Q<", offset: pos))
              h = ((rotl(h, 27) * P1) + P4) & MASK
              pos += 8
            end
            if len - pos >= 4
              h ^= (bytes.unpack1("L<", offset: pos) * P1) & MASK
              h = ((rotl(h, 23) * P2) + P3) & MASK
              pos += 4
            end
            while pos < len
              h ^= (bytes.getbyte(pos) * P5) & MASK
              h = (rotl(h, 11) * P1) & MASK
              pos += 1
            end

            h ^= h >> 33
            h = (h * P2) & MASK
            h ^= h >> 29
            h = (h * P3) & MASK
            h ^ (h >> 32)
          end

          private

          def rotl(x, r)
            ((x << r) | (x >> (64 - r))) & MASK
          end

          def round(acc, input)
            acc = (acc + (input * P2)) & MASK
            (rotl(acc, 31) * P1) & MASK
          end

          def merge(h, lane)
            h ^= round(0, lane)
            ((h * P1) + P4) & MASK
          end
        end
      end
      private_constant :RubyXXH64
    end
  end
end

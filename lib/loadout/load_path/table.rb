# frozen_string_literal: true

module Loadout
  module LoadPath
    # Maps a relative file ("foo/bar.rb") to the lowest local index of the entries that hold it,
    # for a run of consecutive $LOAD_PATH entries. Built in memory from listings.
    class Table # :nodoc:
      attr_reader :entries

      def initialize(entries)
        @entries = entries
        @map = {}
        entries.each_with_index do |entry, i|
          entry.table = self
          entry.local = i
          map = @map
          entry.files.each { |f| map[f] ||= i }
        end
      end

      # +needle+ and +hash+ (see BlobTable.probe) are for blob tables; a Hash needs only +rel+.
      def min(rel, _needle = nil, _hash = nil)
        @map[rel]
      end

      def blob?
        false
      end

      # Serialised form (see BlobTable): the persisted index is never turned back into a Hash.
      def to_blob
        BlobTable.encode(@map, @entries.size)
      end
    end

    # The persisted form of a Table: files bucketed by the bytes of their stem, each bucket one
    # binary String of "\n<rel>\0<index>" lines. Restoring costs one String per bucket; a lookup
    # is one substring search in a bucket of ~32 lines. A Ruby Hash of 30,000 paths costs tens of
    # milliseconds to rebuild on this machine, which is why the index is not stored as one.
    class BlobTable # :nodoc:
      BUCKET_TARGET = 8 # lines per bucket: a lookup searches ~400 bytes

      class << self
        # Returns [mask, buckets] for +map+ (rel => index).
        def encode(map, _count)
          n = 1
          n <<= 1 while n * BUCKET_TARGET < map.size
          buckets = Array.new(n) { +"".b }
          mask = n - 1
          map.each do |rel, idx|
            buckets[bucket_of(stem_of(rel), mask)] << "\n" << rel.b << "\0" << idx.to_s
          end
          buckets.each { |b| b << "\n" unless b.empty? }
          [mask, buckets]
        end

        def stem_of(rel)
          dot = rel.rindex(".")
          dot ? rel[0, dot] : rel
        end

        # Stable across processes (String#hash is seeded per process).
        def bucket_of(stem, mask)
          hash_of(stem) & mask
        end

        # A byte sum alone clusters (similar paths have similar sums); the length and two
        # sampled bytes spread it. Integer ops on C-computed values: no per-byte Ruby loop.
        def hash_of(stem)
          n = stem.bytesize
          return 0 if n.zero?

          (stem.sum(32) * 31) ^ (n * 131) ^ (stem.getbyte(n - 1) * 7919) ^ (stem.getbyte(n >> 1) * 104_729)
        end

        # What a lookup computes once for all the tables it visits: [needle, hash].
        def probe(rel)
          [needle(rel), hash_of(stem_of(rel))]
        end

        # The bytes a bucket holds for +rel+ (one String: binary-tagged in place, not copied).
        def needle(rel)
          "\n#{rel}\0".force_encoding(Encoding::BINARY)
        end
      end

      attr_reader :entries

      def initialize(entries, mask, buckets)
        @entries = entries
        @mask = mask
        @buckets = buckets
        entries.each_with_index do |entry, i|
          entry.table = self
          entry.local = i
        end
      end

      def blob?
        true
      end

      def min(rel, needle = nil, hash = nil)
        needle, hash = BlobTable.probe(rel) unless needle && hash
        bucket = @buckets[hash & @mask]
        return nil if bucket.empty?

        at = bucket.index(needle) or return nil
        bucket.byteslice(at + needle.bytesize, 12).to_i
      end

      def to_blob
        [@mask, @buckets]
      end
    end
  end
end

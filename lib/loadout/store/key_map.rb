# frozen_string_literal: true

module Loadout
  class Store
    # The in-memory key map (key => (record length << Format::OFFSET_BITS) | offset) and the byte
    # accounting behind #stats and auto-compaction. Values are never held here: gets pread them.
    #
    # After a hint load the map starts as +base+, a table that answers lookups straight from the
    # hint bytes (Native::HintTable), plus a small overlay Hash of changes since; the full Hash is
    # built only when every key is needed (#each_pair, #keys, #map), so a warm open allocates
    # nothing per key.
    class KeyMap # :nodoc:
      GONE = Object.new.freeze # overlay marker: deleted, although +base+ still lists it

      attr_reader :live_bytes, :garbage_bytes, :garbage_records, :corrupt_records, :corrupt_bytes, :size

      def initialize(map = {}, stats = nil, base: nil)
        @map = map
        @base = base
        @size = base ? base.size : map.size
        @live_bytes, @garbage_bytes, @garbage_records, @corrupt_records, @corrupt_bytes = stats || [0, 0, 0, 0, 0]
        map.each_value { |packed| @live_bytes += packed >> Format::OFFSET_BITS } if stats.nil?
      end

      # The five counters, in the order the hint file stores them.
      def counters
        [@live_bytes, @garbage_bytes, @garbage_records, @corrupt_records, @corrupt_bytes]
      end

      def lookup(key)
        packed = @map[key]
        if packed.nil?
          @base&.lookup(key)
        elsif packed.equal?(GONE)
          nil
        else
          packed
        end
      end

      def key?(key)
        !lookup(key).nil?
      end

      def keys
        map.keys
      end

      def each_pair(&block)
        map.each_pair(&block)
      end

      # [base table or nil, overlay Hash] as they are, for the hint writer (GONE marks a deletion).
      def layers
        [@base, @map]
      end

      # The whole key map as a Hash (built from the hint table on first use).
      def map
        materialize if @base
        @map
      end

      # Applies a flat [flags, key, offset, length, ...] list from Format.parse.
      def apply_entries(entries)
        i = 0
        n = entries.length
        while i < n
          apply(entries[i], entries[i + 1], entries[i + 2], entries[i + 3])
          i += 4
        end
      end

      def apply(flags, key, off, len)
        case flags
        when Format::PUT
          old = lookup(key)
          old ? retire(old) : @size += 1
          @map[key] = (len << Format::OFFSET_BITS) | off
          @live_bytes += len
        when Format::DELETE
          remove(key)
          @garbage_bytes += len
          @garbage_records += 1
        end
        # META records (the file header, Journal bookkeeping) are not keys.
      end

      def add_corrupt(records, bytes)
        @corrupt_records += records
        @corrupt_bytes += bytes
      end

      # A record that failed its check on read: it leaves the map and counts as corrupt.
      def drop_corrupt(key)
        old = lookup(key) or return
        remove(key)
        @garbage_bytes -= old >> Format::OFFSET_BITS
        @garbage_records -= 1
        add_corrupt(1, old >> Format::OFFSET_BITS)
      end

      private

      def remove(key)
        old = lookup(key) or return
        retire(old)
        @size -= 1
        if @base
          @map[key] = GONE
        else
          @map.delete(key)
        end
      end

      def retire(old)
        len = old >> Format::OFFSET_BITS
        @live_bytes -= len
        @garbage_bytes += len
        @garbage_records += 1
      end

      def materialize
        full = @base.to_h
        @map.each { |key, packed| packed.equal?(GONE) ? full.delete(key) : full[key] = packed }
        @map = full
        @base = nil
      end
    end
  end
end

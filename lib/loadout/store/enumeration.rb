# frozen_string_literal: true

module Loadout
  class Store
    # The reads besides #get: whether a key is there, every live entry, how many there are, and
    # the byte accounting behind `loadout stats` (the defer_writes queue included).
    module Enumeration # :nodoc:
      #: (String) -> bool
      def key?(key)
        key = binary(key)
        @mutex.synchronize do
          if @pending&.key?(key)
            !@pending[key].equal?(DELETED)
          else
            @index.key?(key)
          end
        end
      end

      # Yields every live key and value (values read and checked one at a time).
      #: () { (String, String) -> void } -> void
      def each
        return enum_for(:each) unless block_given?

        keys = @mutex.synchronize { @index.keys | (@pending ? @pending.keys : []) }
        keys.each do |key|
          value = get(key)
          yield key, value if value
        end
        self
      end

      # True once this process has found records another process appended (read under the
      # append lock, before each of its own writes): a boot that began on an empty store learns
      # that a parallel boot is filling it.
      def grown_by_others? #: () -> bool
        @grown_by_others == true
      end

      #: () -> Integer
      def size
        @mutex.synchronize do
          n = @index.size
          @pending&.each do |key, value|
            if value.equal?(DELETED)
              n -= 1 if @index.key?(key)
            elsif !@index.key?(key)
              n += 1
            end
          end
          n
        end
      end

      #: () -> Hash[Symbol, Integer | bool]
      def stats
        @mutex.synchronize do
          file_size = begin
            @file && !@closed ? @file.size : 0
          rescue SystemCallError, IOError
            0
          end
          { live_records: @index.size, live_bytes: @index.live_bytes,
            garbage_records: @index.garbage_records, garbage_bytes: @index.garbage_bytes,
            corrupt_records: @index.corrupt_records, corrupt_bytes: @index.corrupt_bytes,
            file_size: file_size, pending_writes: @pending ? @pending.size : 0, writable: writable? }
        end
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  class Store
    # Store#claim: the write that decides under the append lock. A mixin of Store like Writer
    # (whose locking and appending it uses), in a file of its own.
    module Claim # :nodoc:
      # Writes +key+ from what the block returns, deciding with every process's latest writes
      # in view: under the append lock, with the map caught up, the block gets the current value
      # (nil when none) and returns the bytes to append now, or nil to leave it. Parallel
      # processes that would all store the same thing (cold boots on one cache) do it once.
      # Returns true when it wrote. Not deferred, whatever defer_writes says.
      #: (String) { (String?) -> String? } -> bool
      def claim(key)
        key = binary(key)
        return false if @mutex.owned? # from code that runs inside the store's own work

        @mutex.synchronize do
          next false unless writing?

          written = guarded_write do
            with_write_lock do |file|
              packed = @index.lookup(key)
              current = @pending&.key?(key) ? @pending[key] : packed && read_value(key, packed)
              current = nil if current.equal?(@deleted)
              value = yield current
              next false unless value.is_a?(@string_class)
              next false unless @format.within_limits?(key.bytesize, value.bytesize)

              @pending&.delete(key)
              value = binary(value)
              buf = @format.frame_into(@string_class.new(capacity: @record_header + key.bytesize + value.bytesize,
                                                         encoding: @binary_encoding), @put_flag, key, value)
              write_records(file, buf, [@put_flag, key, 0, buf.bytesize])
              buf.clear # freed now: a cold boot claims every file it compiles
              true
            end
          end
          written == true
        end
      end
    end
  end
end

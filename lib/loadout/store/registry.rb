# frozen_string_literal: true

module Loadout
  class Store
    # Open stores, closed at process exit by the process that opened (or last wrote) them, so
    # deferred writes and hints reach the disk on a normal exit, an exception or SIGTERM. A forked
    # child that never wrote leaves its parent's queue alone. exit! and SIGKILL skip this (nothing
    # in Ruby can run then); only what was already appended survives those.
    module Registry # :nodoc:
      @stores = {}
      @lock = Mutex.new
      @hooked = false

      class << self
        def add(store)
          @lock.synchronize do
            @stores[store.object_id] = store
            unless @hooked
              @hooked = true
              at_exit { Registry.close_all }
            end
          end
        end

        def remove(store)
          @lock.synchronize { @stores.delete(store.object_id) }
        end

        def close_all
          stores = @lock.synchronize { @stores.values }
          stores.each(&:__close_at_exit)
        end
      end
    end
  end
end

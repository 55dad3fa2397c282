# frozen_string_literal: true

module Loadout
  # The one event hook both caches report through. With no subscriber, emitting costs a nil
  # check and allocates nothing (callers guard with `Instrumentation.enabled?` before building
  # keyword arguments on hot paths).
  #
  #   Loadout.instrumentation = ->(event, path, **info) { ... }
  #
  # Events: load path index :hit, :miss, :rescan, :fallback; compile cache :hit, :miss, :stale,
  # :revalidated, :corrupt, :skipped. +info+ always carries :cache (:load_path, :iseq, :yaml,
  # :json, :store) and, where there is one, :reason.
  module Instrumentation
    @subscriber = nil
    @watchers = []

    class << self
      attr_reader :subscriber

      # Calls +block+ with enabled? now and whenever it changes (the require hook keeps its own
      # flag instead of asking on every require).
      def __watch(&block) # :nodoc:
        @watchers << block
        block.call(enabled?)
      end

      # Sets (or clears, with nil) the subscriber; it must respond to #call.
      #: (^(Symbol, String?, **untyped) -> void | nil) -> void
      def subscriber=(callable)
        unless callable.nil? || callable.respond_to?(:call)
          raise ArgumentError, "instrumentation must respond to #call, got #{callable.inspect}"
        end

        @subscriber = callable
        @watchers.each { |w| w.call(enabled?) }
      end

      def enabled?
        !@subscriber.nil?
      end

      # Reports one event. A subscriber that raises never breaks the host: it is removed and the
      # error is reported once.
      #: (Symbol, String?, **untyped) -> void
      def emit(event, path, **info)
        sub = @subscriber or return
        sub.call(event, path, **info)
      rescue StandardError => e
        self.subscriber = nil
        warn "loadout: instrumentation subscriber raised #{e.class}: #{e.message}; it has been removed"
      end
    end
  end

  class << self
    def instrumentation=(callable)
      Instrumentation.subscriber = callable
    end

    def instrumentation
      Instrumentation.subscriber
    end
  end
end

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

    class << self
      attr_reader :subscriber

      # Sets (or clears, with nil) the subscriber; it must respond to #call.
      #: (^(Symbol, String?, **untyped) -> void | nil) -> void
      def subscriber=(callable)
        unless callable.nil? || callable.respond_to?(:call)
          raise ArgumentError, "instrumentation must respond to #call, got #{callable.inspect}"
        end

        @subscriber = callable
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
        @subscriber = nil
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

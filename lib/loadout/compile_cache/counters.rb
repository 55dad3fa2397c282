# frozen_string_literal: true

module Loadout
  module CompileCache
    # Per-kind counters behind CompileCache.stats, and the one place events are reported from.
    class Counters # :nodoc:
      EVENTS = { hit: :hits, miss: :misses, stale: :stale, revalidated: :revalidated, corrupt: :corrupt,
                 skipped: :skipped }.freeze
      FIELDS = %i[hits misses stale revalidated corrupt skipped compiles bytes_read load_ns compile_ns digest_ns].freeze

      def initialize
        # Read once: constants named per call are looked up again after every class definition
        # on Ruby 3.1, i.e. once per file a boot loads.
        @events = EVENTS
        @instrumentation = Instrumentation
        @counts = {}
        @reasons = {}
        KINDS.each do |kind|
          @counts[kind] = FIELDS.to_h { |f| [f, 0] }
          @reasons[kind] = Hash.new(0)
        end
      end

      # Counts one event and reports it to the instrumentation subscriber, if there is one.
      def event(kind, event, path, reason = nil) #: (Symbol, Symbol, String?, ?Symbol?) -> void
        @counts[kind][@events.fetch(event)] += 1
        @reasons[kind][reason] += 1 if reason
        return unless @instrumentation.enabled?

        if reason
          Instrumentation.emit(event, path, cache: kind, reason: reason)
        else
          Instrumentation.emit(event, path, cache: kind)
        end
      end

      def add(kind, field, amount) #: (Symbol, Symbol, Integer) -> void
        @counts[kind][field] += amount
      end

      # { iseq: { hits: 3, ..., reasons: { coverage: 1 } }, yaml: {...}, json: {...} }
      def to_h #: () -> Hash[Symbol, Hash[Symbol, untyped]]
        @counts.to_h { |kind, c| [kind, c.merge(reasons: @reasons[kind].dup)] }
      end
    end
  end
end

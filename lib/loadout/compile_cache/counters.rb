# frozen_string_literal: true

module Loadout
  module CompileCache
    # Per-kind counters behind CompileCache.stats, and the one place events are reported from.
    class Counters # :nodoc:
      EVENTS = { hit: :hits, miss: :misses, stale: :stale, revalidated: :revalidated, corrupt: :corrupt,
                 skipped: :skipped }.freeze
      FIELDS = %i[hits misses stale revalidated corrupt skipped compiles bytes_read load_ns compile_ns digest_ns].freeze
      # YAML/JSON lookups remembered for LoadedFiles: a boot makes tens to hundreds; a process
      # parsing many distinct files (uploads, say) stops remembering here.
      LOADED_LIMIT = 10_000

      # { store key => path } of the YAML and JSON lookups this process made (see LoadedFiles).
      attr_reader :loaded

      def initialize
        # (hot path: see ARCHITECTURE.md)
        @events = EVENTS
        @instrumentation = Instrumentation
        @counts = {}
        @reasons = {}
        @loaded = {}
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
          @instrumentation.emit(event, path, cache: kind, reason: reason)
        else
          @instrumentation.emit(event, path, cache: kind)
        end
      end

      # Remembers one YAML or JSON lookup: its store key and the file's path.
      def loaded!(key, path) #: (String, String) -> void
        @loaded[key] = path if @loaded.size < LOADED_LIMIT
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

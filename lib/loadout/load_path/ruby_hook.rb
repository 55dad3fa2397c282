# frozen_string_literal: true

module Loadout
  module LoadPath
    # The Ruby twin of ext/loadout/require_native.c: the same decisions, for Rubies where the C
    # extension is not built. Differences a program can see: the hook is a Ruby method, so its
    # frames show in backtraces and `caller` inside required files; and "already loaded?" is a
    # superset check (LoadedFeatures) that hands the feature to Ruby whenever Ruby might say yes,
    # instead of asking Ruby (rb_feature_provided has no Ruby counterpart). So Ruby answers every
    # require of a loaded feature here, as without loadout (for a loaded extension required again
    # by name, that is Ruby's search of every entry for a .rb, which the native hook answers).
    module RubyHook # :nodoc:
      REQUIRES, PROVIDED, HITS, MISSES, UNKNOWN, STALE, NOT_STRING, DIRECT, ENCODING, SHAPE, EXTENSION, BUSY =
        (0...12).to_a.freeze
      DLEXT = ".#{RbConfig::CONFIG["DLEXT"]}"
      # The :fallback event's reason per counter (none for DIRECT: nothing to search).
      REASONS = { UNKNOWN => :unknown_entry, NOT_STRING => :not_string, ENCODING => :encoding, SHAPE => :shape,
                  BUSY => :busy }.freeze

      @state = nil
      @pair = [nil, nil, nil].freeze # [table, $LOAD_PATH snapshot, cwd], replaced together
      @instrument = false
      @counters = Array.new(12, 0)
      @loaded = nil

      class << self
        attr_reader :counters

        # +snapshot+: $LOAD_PATH as it was when the state began building +table+ (a reader in
        # another thread sees the old table with the old snapshot, or both new ones).
        def activate(state, table, cwd, snapshot)
          @loaded ||= LoadedFeatures.new.tap { Observer.attach }
          @pair = [table, snapshot, cwd].freeze
          @state = state
        end

        def snapshot
          $LOAD_PATH.dup
        end

        def instrument(on)
          @instrument = on ? true : false
        end

        def reset_counters
          @counters = Array.new(12, 0)
        end

        def loaded_features_changed
          @loaded&.stale!
        end

        # Kernel#require (and every alias of Ruby's C require) while the twin is installed;
        # +original+ is the UnboundMethod it replaced.
        def require(receiver, feature, original)
          return original.bind_call(receiver, feature) unless @state

          found = internal { decide(feature) }
          return original.bind_call(receiver, feature) unless found
          raise not_found(feature) if found == :miss

          begin
            original.bind_call(receiver, found)
          rescue LoadError => e
            raise unless e.path == found # (Ruby 3.3's LoadError#path is a copy, not the String given)

            # The file left since it was listed (or Ruby cannot open it): Ruby searches instead.
            @counters[STALE] += 1
            internal { @state&.__stale(found) }
            original.bind_call(receiver, feature)
          end
        end

        private

        # The path to hand Ruby, :miss (Ruby's search would find nothing), or nil (Ruby decides).
        def decide(feature)
          state = @state
          @counters[REQUIRES] += 1
          return fallback(NOT_STRING, feature) unless feature.instance_of?(String)
          return fallback(BUSY, feature) if state.busy?

          shape = shape_of(feature)
          return fallback(shape, feature) if shape
          if @loaded.maybe_loaded?(stem_of(feature), nil)
            @counters[PROVIDED] += 1
            return nil
          end
          2.times do |attempt|
            table, snapshot, cwd = @pair
            if table.nil? || $LOAD_PATH != snapshot || (cwd && cwd != Dir.pwd)
              state.__refresh
              table = @pair[0] or return nil
            end
            found = RubyIndex.lookup(table, feature)
            return hit(state, feature, table, found) if found.is_a?(Array)
            return fallback(UNKNOWN, feature) if found == :unknown_entry

            # After the state listed a changed app directory again, the listings are as fresh as
            # a search would be: the second miss is final.
            if attempt.zero?
              verdict = state.__miss(feature)
              next if verdict == :retry
              return fallback(UNKNOWN, feature) unless verdict == :miss
            end

            @counters[MISSES] += 1
            state.__event(:miss, feature, nil) if @instrument
            return :miss
          end
          nil
        end

        def hit(state, feature, table, found)
          pos, rel = found
          base = table.bases[pos]
          @counters[HITS] += 1
          state.__event(:hit, feature, nil) if @instrument
          (base == "/" ? "/#{rel}" : "#{base}/#{rel}").force_encoding(feature.encoding)
        end

        # Runs loadout's own part of a require; a failure there turns the index off (one
        # warning) and the require goes to Ruby. Never wraps the app's code.
        def internal
          yield
        rescue StandardError => e
          disable(e)
          nil
        end

        def fallback(counter, feature)
          @counters[counter] += 1
          reason = REASONS[counter]
          @state.__event(:fallback, feature, reason) if @instrument && reason
          nil
        end

        # require_native.c shape_counter: the counter slot of a feature the index does not model.
        def shape_of(feature)
          return SHAPE if feature.empty? || feature.bytesize > 4000
          return DIRECT if feature.start_with?("/", "~", ".")
          return ENCODING unless feature.ascii_only? && feature.encoding.ascii_compatible?
          return SHAPE if feature.include?("\0") || feature.end_with?("/") || feature.include?("//")
          return SHAPE if feature.include?("/./") || feature.include?("/../")
          return SHAPE if feature.end_with?("/.", "/..")

          nil
        end

        # The feature without the extension Ruby recognises (LoadedFeatures keys).
        def stem_of(feature)
          stem, kind = RubyIndex.classify(feature)
          kind == :rb ? stem[0, stem.length - 3] : stem
        end

        # Ruby's LoadError for a feature its search cannot find (error.c rb_load_fail).
        def not_found(feature)
          message = String.new("cannot load such file", encoding: Encoding::BINARY) << " -- " << feature
          error = LoadError.new(message)
          error.instance_variable_set(:@path, feature)
          error.set_backtrace(caller_locations.drop_while { |l| l.path.to_s.include?("/lib/loadout/") }.map(&:to_s))
          error
        end

        def disable(error)
          return unless @state

          @state = nil
          @pair = [nil, nil, nil].freeze
          warn "loadout: load path index disabled (#{error.class}: #{error.message}); using plain require"
        end
      end
    end
  end
end

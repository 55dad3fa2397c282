# frozen_string_literal: true

module Loadout
  module LoadPath
    # The Ruby twin of ext/loadout/require_native.c: the same decisions, for Rubies where the C
    # extension is not built. Differences a program can see: the hook is a Ruby method, so its
    # frames show in backtraces and `caller` inside required files; and "already loaded?" is a
    # superset check (LoadedFeatures) that hands the feature to Ruby whenever Ruby might say yes,
    # instead of asking Ruby (rb_feature_provided has no Ruby counterpart). So Ruby answers every
    # require of a loaded feature here, as without loadout (for a loaded extension required again
    # by name, that is Ruby's search of every item for a .rb, which the native hook answers).
    module RubyHook # :nodoc:
      REQUIRES, PROVIDED, HITS, MISSES, UNKNOWN, STALE, NOT_STRING, DIRECT, ENCODING, SHAPE, BUSY,
        FRONT, RUBYGEMS, GEM_WALKS = (0...14).to_a.freeze
      DLEXT = ".#{RbConfig::CONFIG["DLEXT"]}"
      # The :fallback event's reason per counter (none for DIRECT: nothing to search).
      REASONS = { UNKNOWN => :unknown_entry, NOT_STRING => :not_string, ENCODING => :encoding, SHAPE => :shape,
                  BUSY => :busy }.freeze

      @state = nil
      @pair = [nil, nil, nil].freeze # [table, $LOAD_PATH snapshot, cwd], replaced together
      @instrument = false
      @counters = Array.new(14, 0)
      @loaded = nil
      @ruby_require = nil

      class << self
        attr_reader :counters
        # Ruby's own C require (the first method entry RequireHook replaced), for the front's hits.
        attr_accessor :ruby_require

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
          @counters = Array.new(14, 0)
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

        # RubyGems' Kernel#require (and its aliases) while the front is installed (see
        # RubyGemsFront and require_native.c lo_front_require); +rubygems+ is RubyGems' require
        # as a Method. Where RubyGems would pass the name on unchanged, a name the index resolves
        # is required by its path and a feature that may be loaded goes straight to Ruby's
        # require (the twin cannot tell loaded from maybe loaded: Ruby decides, as it would
        # under RubyGems); anything else goes to RubyGems.
        def front(feature, rubygems)
          found = @state && @ruby_require && internal { front_decide(feature) }
          unless found
            @counters[RUBYGEMS] += 1
            return rubygems.call(feature)
          end

          @counters[REQUIRES] += 1
          @counters[FRONT] += 1
          if found == :loaded || found == :direct
            @counters[found == :loaded ? PROVIDED : DIRECT] += 1
            path = feature
          else
            @counters[HITS] += 1
            @state.__event(:hit, feature, nil) if @instrument
            path = found
          end
          begin
            @ruby_require.bind_call(TOPLEVEL_BINDING.receiver, path)
          rescue LoadError => e
            if e.path == path && found.is_a?(String)
              @counters[STALE] += 1
              internal { @state&.__stale(found) }
              return rubygems.call(feature)
            end
            raise unless e.path == feature

            RubyGemsFront.load_error(feature, e)
          end
        end

        private

        # The path the front requires for +feature+, :loaded or :direct (Ruby decides, without
        # RubyGems: a feature that may be loaded, an absolute or ./ path), or nil (RubyGems decides).
        def front_decide(feature)
          state = @state
          return nil if !feature.instance_of?(String) || state.busy?

          shape = shape_of(feature)
          return rubygems_passes?(state, feature) ? :direct : nil if shape == DIRECT
          return nil if shape
          return nil unless rubygems_passes?(state, feature)
          return :loaded if @loaded.maybe_loaded?(stem_of(feature), nil)

          table = current_table(state) or return nil
          found = RubyIndex.lookup(table, feature)
          found.is_a?(Array) ? found_path(table, found, feature) : nil
        end

        # require_native.c rubygems_passes / front_default_gem.
        def rubygems_passes?(state, feature)
          return true if ::Gem.respond_to?(:discover_gems_on_require) && !::Gem.discover_gems_on_require

          spec = ::Gem.find_unresolved_default_spec(feature)
          return false if spec && !default_gem_walked?(state, feature, spec)

          ::Gem::Specification.unresolved_deps.empty?
        end

        def default_gem_walked?(state, feature, spec)
          return false if ::Gem.loaded_specs[spec.name] || spec.name == "bundler"

          table = current_table(state) or return false
          limit = ::Gem.load_path_insert_index - ::Gem.activated_gem_paths
          walk = state.__walk(feature)
          return false unless walk && walk[0].equal?(table)

          answer = walk_answer(table, walk[1], walk[2], feature, limit)
          return false if answer == :unknown

          @counters[GEM_WALKS] += 1
          RubyGemsFront.activate_default(spec) if answer == :not_found
          true
        end

        # require_native.c walk_answer: :found, :not_found or :unknown.
        def walk_answer(table, items, positions, feature, limit)
          limit = limit.clamp(0, items.size)
          unknown = false
          ["", ".rb", DLEXT].each do |suffix|
            name = "#{feature}#{suffix}"
            if name.end_with?(".rb", DLEXT)
              pos = table.find(name)
              item = pos && pos < table.first_opaque ? positions[pos] : nil
              opaque = table.first_opaque < positions.size ? positions[table.first_opaque] : nil
              next unknown = true if opaque && opaque < limit && (item.nil? || opaque < item)
              next if item.nil? || item >= limit
              next unknown = true if items[item] == false

              return :found
            end
            items.first(limit).each do |base|
              next unknown = true if base.nil?
              next unless base
              return :found if File.file?(base == "/" ? "/#{name}" : "#{base}/#{name}")
            end
          end
          unknown ? :unknown : :not_found
        end

        # The table for the current $LOAD_PATH and cwd (refreshed when either changed), or nil.
        def current_table(state)
          table, snapshot, cwd = @pair
          return table unless table.nil? || $LOAD_PATH != snapshot || (cwd && cwd != Dir.pwd)

          state.__refresh
          @pair[0]
        end

        def found_path(table, found, feature)
          pos, rel = found
          base = table.bases[pos]
          (base == "/" ? "/#{rel}" : "#{base}/#{rel}").force_encoding(feature.encoding)
        end

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

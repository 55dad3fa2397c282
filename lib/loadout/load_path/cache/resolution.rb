# frozen_string_literal: true

module Loadout
  module LoadPath
    class Cache # :nodoc:
      # What one require or load resolves to: the per-require path. A mixin of Cache, so it
      # reads Cache's ivars directly; the constants a hit needs (Feature, Instrumentation,
      # Array) are ivars read once by Cache#initialize, because Ruby 3.1 drops every constant
      # cache whenever a class is defined, which nearly every required file does.
      module Resolution # :nodoc:
        # The abspath require should load, nil to hand +feature+ to Ruby unchanged, or MISS when
        # Ruby would raise LoadError. +via+: :rubygems (Kernel#require with RubyGems in the chain),
        # :plain (Kernel.require, or no RubyGems), :load (Kernel#load: exact name, no extension).
        def resolve(feature, via)
          return nil if @mutex.owned? # a require from inside our own work: let Ruby answer

          # RubyGems is asked outside the lock: its code may require files, and another thread
          # may hold Ruby's lock on one of them while waiting for ours.
          if via == :rubygems && feature.instance_of?(String)
            return fallback(feature, :default_gem) if Gem.find_unresolved_default_spec(feature)
            return fallback(feature, :unresolved_deps) unless Gem::Specification.unresolved_deps.empty?
          end
          found = @mutex.synchronize { resolve_locked(feature, via) }
          return found unless found.equal?(RUBYGEMS_MISS)

          miss(feature)
          rubygems_settled? ? MISS : RUBYGEMS_MISS
        end

        # Counts a miss that RubyGems then turned into a gem activation.
        def activated!(feature)
          fallback(feature, :rubygems_activation)
        end

        private

        def resolve_locked(feature, via)
          sync_state
          @stats[:requires] += 1
          parsed = via == :load ? @feature.parse_exact(feature) : @feature.parse(feature)
          unless parsed.is_a?(@array)
            return fallback(feature, parsed) if parsed.is_a?(Symbol) && parsed != :direct && via != :load

            return nil
          end
          stem, exts = parsed
          if via != :load && (@loaded_unsure || @loaded.maybe_loaded?(stem, @lpaths))
            # Ruby answers this from its own loaded-features index, without the filesystem.
            @stats[:already_loaded] += 1
            return nil
          end

          found = lookup_with_recheck(stem, exts)
          if found.is_a?(@array)
            @stats[:hits] += 1
            @instrumentation.emit(:hit, feature, cache: :load_path) if @instrumentation.enabled?
            found[0].abspath(found[1])
          elsif found == :unknown # Index::UNKNOWN
            fallback(feature, :unknown_entry)
          else
            # load falls back to a cwd-relative file: Ruby's job. RubyGems may activate a gem.
            return nil if via == :load
            return RUBYGEMS_MISS if via == :rubygems

            miss(feature)
          end
        end

        def lookup_with_recheck(stem, exts)
          found = @index.lookup(stem, exts)
          return found unless found.nil? && @dev

          changed = @volatile.select { |e| e.maybe_changed_for?(stem) }
          return nil if changed.empty?

          changed.each { |e| replace_entry(e) }
          sync_state
          @index.lookup(stem, exts)
        end

        def miss(feature)
          @stats[:misses] += 1
          Instrumentation.emit(:miss, feature, cache: :load_path) if Instrumentation.enabled?
          MISS
        end

        def fallback(feature, reason)
          @stats[:fallbacks] += 1
          Instrumentation.emit(:fallback, feature, cache: :load_path, reason: reason) if Instrumentation.enabled?
          nil
        end

        # On a miss RubyGems runs Gem.try_activate(feature): the first gem spec (of
        # Gem::Specification.stubs) holding the file is activated. When every stub's gem is
        # already loaded at that very version (always so under Bundler.setup), activate is a no-op
        # and RubyGems ends in the same LoadError; otherwise it could activate a gem (or raise a
        # version conflict), so the miss goes to RubyGems and costs what it costs in plain Ruby.
        def rubygems_settled?
          stubs = Gem::Specification.stubs
          loaded = Gem.loaded_specs
          key = [stubs.object_id, stubs.size, loaded.size]
          return @settled if key == @settled_key

          @settled_key = key
          @settled = stubs.all? do |stub|
            spec = loaded[stub.name]
            spec && spec.version == stub.version
          end
        rescue StandardError
          false
        end
      end
    end
  end
end

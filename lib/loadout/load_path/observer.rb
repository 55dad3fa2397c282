# frozen_string_literal: true

module Loadout
  module LoadPath
    # Extended onto $LOAD_PATH and $LOADED_FEATURES: every Array method that can change the
    # contents calls the original, then tells the cache. Rebuilding is deferred to the next
    # require, so a burst of mutations costs one refresh. Cheap cases stay cheap there: views
    # reuse every table whose entries are still adjacent (see Index). When loadout is
    # uninstalled the hooks only pass through (a module cannot be removed from an object).
    module Observer # :nodoc:
      MUTATORS = %i[
        << push append concat unshift prepend insert []= delete delete_at delete_if reject! select!
        filter! keep_if clear replace fill map! collect! compact! flatten! uniq! reverse! rotate!
        sort! sort_by! shuffle! slice! pop shift
      ].freeze

      def self.define(mod, hook)
        MUTATORS.each do |name|
          mod.define_method(name) do |*args, **kw, &block|
            kw.empty? ? super(*args, &block) : super(*args, **kw, &block)
          ensure
            # Also when a block raised half-way through delete_if & co.
            LoadPath.__send__(hook)
          end
        end
        mod
      end

      LoadPathHooks = define(Module.new, :__load_path_changed)
      LoadedFeaturesHooks = define(Module.new, :__loaded_features_changed)

      class << self
        def attach
          $LOAD_PATH.extend(LoadPathHooks) unless $LOAD_PATH.frozen? || $LOAD_PATH.is_a?(LoadPathHooks)
          unless $LOADED_FEATURES.frozen? || $LOADED_FEATURES.is_a?(LoadedFeaturesHooks)
            $LOADED_FEATURES.extend(LoadedFeaturesHooks)
          end
        end
      end
    end
  end
end

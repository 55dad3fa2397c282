# frozen_string_literal: true

module Loadout
  module LoadPath
    # The pure-Ruby backend only: extended onto $LOADED_FEATURES, every Array method that can
    # change its contents calls the original, then marks RubyHook's LoadedFeatures stale (Ruby
    # appends to it in C, unseen, which LoadedFeatures notices by its size). The native hook asks
    # Ruby itself (rb_feature_provided) and needs none of this.
    module Observer # :nodoc:
      MUTATORS = %i[
        << push append concat unshift prepend insert []= delete delete_at delete_if reject! select!
        filter! keep_if clear replace fill map! collect! compact! flatten! uniq! reverse! rotate!
        sort! sort_by! shuffle! slice! pop shift
      ].freeze

      LoadedFeaturesHooks = Module.new do
        MUTATORS.each do |name|
          define_method(name) do |*args, **kw, &block|
            kw.empty? ? super(*args, &block) : super(*args, **kw, &block)
          ensure
            # Also when a block raised half-way through delete_if & co.
            RubyHook.loaded_features_changed
          end
        end
      end

      class << self
        def attach
          return if $LOADED_FEATURES.frozen? || $LOADED_FEATURES.is_a?(LoadedFeaturesHooks)

          $LOADED_FEATURES.extend(LoadedFeaturesHooks)
        end
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  module LoadPath
    # The require hook's third place: in place of Bundler's bundled-gems warning (Ruby 3.4+, not
    # 3.3: see supported?; Gem::BUNDLED_GEMS.replace_require, installed by bundler/setup), which
    # decorates Kernel#require and Kernel.require and runs Gem::BUNDLED_GEMS.warning? (String
    # copies, a split) on every call before what it wraps (`no_warning_require`). The hook
    # (require_native.c lo_bundled_require) passes a name that warning? cannot warn about straight
    # to what Bundler's block calls next: one of loadout's hooks (the lower one for Kernel#require,
    # whose block finds Kernel.no_warning_require; the front one for Kernel.require when Bundler
    # kept RubyGems' require, 2.5+ with gem discovery off). Which names those are is read from the
    # bundled-gems tables of the Ruby in use (SINCE, SINCE_FAST_PATH, EXACT; see require_native.c
    # for the rule); any other name, and any name while loadout's index is off, goes to Bundler's
    # method.
    #
    # Installed only when Bundler's decoration is the method it replaces (by source file and
    # original name), warning? and SINCE exist, and what it calls next is one of loadout's hooks;
    # the native backend only (the twin leaves Bundler's method in place).
    module BundledGemsFront # :nodoc:
      FILE = %r{/bundled_gems\.rb\z}
      @installed = false

      class << self
        # Replaces Bundler's decoration of Kernel#require and Kernel.require. Returns how many.
        #: () -> Integer
        def install!
          return 0 if @installed || BACKEND != :native || !supported?

          # Bundler's block calls `kernel_class.send(:no_warning_require, name)`: from Kernel#require
          # that finds Kernel.no_warning_require (the singleton's), from Kernel.require it finds
          # Kernel#no_warning_require (Kernel's Class object inherits Kernel's instance methods).
          # Each is replaced only when what it calls next is one of loadout's hooks.
          pairs = [[::Kernel, ::Kernel.singleton_class], [::Kernel.singleton_class, ::Kernel]]
          found = pairs.filter_map do |mod, next_mod|
            name, um, public = entry(mod)
            kind = um && next_kind(next_mod)
            [mod, name, um, public, kind] if kind
          end
          return 0 if found.empty?

          instance = found.find { |f| f[0].equal?(::Kernel) }
          singleton = found.find { |f| !f[0].equal?(::Kernel) }
          Native.lp_bundled(instance && instance[2].bind(TOPLEVEL_BINDING.receiver),
                            singleton && singleton[2].bind(::Kernel),
                            [instance&.last == :rubygems, singleton&.last == :rubygems], names, prefixes)
          @installed = true
          replace(found)
        end

        # Not on Ruby 3.3: its warning? looks a fixed three frames up the stack for a bundled gem's
        # own file (`caller_locations(3, 3)`), and the hook's frame, one more between Bundler's
        # block and the caller for every name it hands on, moves that window: kconv.rb's
        # `require "nkf"` then lost the warning plain Ruby gives. From 3.4 on warning? counts no
        # frames (its messages walk them by label, and the hook's frame is labelled "require").
        def supported?
          RUBY_VERSION >= "3.4" && defined?(::Gem::BUNDLED_GEMS) && ::Gem::BUNDLED_GEMS.respond_to?(:warning?) &&
            ::Gem::BUNDLED_GEMS.const_defined?(:SINCE, false) && ::Gem::BUNDLED_GEMS::SINCE.is_a?(Hash)
        end

        # Every name warning? looks up: the bundled gems, their names without a "prefix-", and
        # EXACT's features and gems.
        def names
          tables = %i[SINCE SINCE_FAST_PATH EXACT].filter_map do |name|
            ::Gem::BUNDLED_GEMS.const_get(name, false) if ::Gem::BUNDLED_GEMS.const_defined?(name, false)
          end
          exact = ::Gem::BUNDLED_GEMS.const_defined?(:EXACT, false) ? ::Gem::BUNDLED_GEMS::EXACT : {}
          (tables.flat_map(&:keys) + exact.values.grep(String)).map(&:to_s).uniq
        end

        def prefixes
          %w[rubylibdir rubyarchdir].filter_map { |k| RbConfig::CONFIG[k] }.map { |d| d.end_with?("/") ? d : "#{d}/" }
        end

        private

        # [name, UnboundMethod, public?] of +mod+'s require when it is Bundler's decoration.
        def entry(mod)
          um = RequireHook.own_method(mod, :require)
          return nil unless um && um.original_name == :require && FILE.match?(um.source_location&.first.to_s)

          public = mod.public_method_defined?(:require, false) ? true : false
          [:require, um, public]
        end

        # Which of loadout's hooks +mod+'s no_warning_require is (:rubygems, :lower), or nil.
        def next_kind(mod)
          return :rubygems if RubyGemsFront.hooked?(mod, :no_warning_require)

          RequireHook.hooked?(mod, :no_warning_require) ? :lower : nil
        end

        def replace(found)
          verbose = $VERBOSE
          $VERBOSE = nil # redefining a method under -w warns; nothing here is a mistake
          found.each do |mod, name, _um, public, _kind|
            Native.lp_bundled_hook(mod, name, public, !mod.equal?(::Kernel))
            RequireHook.register(:bundled, mod, name)
          end
          found.size
        ensure
          $VERBOSE = verbose
        end
      end
    end
  end
end

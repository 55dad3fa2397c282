# frozen_string_literal: true

module Loadout
  module LoadPath
    # The require hook's second place: in place of RubyGems' Kernel#require, in apps where
    # Bundler has not removed it (no bundler/setup: scripts, monorepos and test runners that put
    # lib dirs on $LOAD_PATH themselves). RequireHook's place, below every decorator, answers
    # only once RubyGems has run its per-call Ruby code (a monitor, a default-gem lookup, and for
    # a default gem not activated yet a walk of every $LOAD_PATH item ahead of its insert index:
    # File.symlink?, File.join, File.expand_path and File.file? per item and suffix). Answering
    # before that is what a cache sitting above RubyGems does (Bootsnap), but such a cache hands
    # RubyGems an absolute path, which skips default-gem activation; this one keeps it.
    #
    # The hook (require_native.c lo_front_require, or the twin below) answers a require only
    # where RubyGems would pass the name to gem_original_require unchanged: no default gem left
    # to activate for it and no unresolved dependency among activated gems; it then answers what
    # the lower hook would without Ruby's search (a loaded feature: false; a name the index
    # resolves: required by absolute path). For a default gem not activated yet (and no other
    # version of it active), it answers RubyGems' walk from the index and activates the gem as
    # RubyGems would (activate_default). A LoadError for the very name, raised by the file
    # itself, is handled as RubyGems handles it (load_error). Everything else goes to RubyGems'
    # own method, with the name, and from there to the lower hook: gem activation on a
    # LoadError, Gem.try_activate, unresolved dependencies, other versions, Bundler's own
    # default gem.
    #
    # Installed only for the RubyGems versions whose Kernel#require this follows (3.3 to 4.0:
    # the same decisions, read in their kernel_require.rb), with Gem.suffixes as Ruby builds them
    # and gem_original_require still Ruby's require (so the lower hook is what RubyGems calls).
    # Frames: a require the front answers has no RubyGems frame in its backtrace (like any
    # cache above RubyGems); one it passes on has the hook's frame above RubyGems'.
    module RubyGemsFront # :nodoc:
      FILE = %r{rubygems/core_ext/kernel_require\.rb>?\z}
      @rubygems = nil # RubyGems' Kernel#require, bound to the main object, once installed

      class << self
        # Replaces every entry of RubyGems' Kernel#require (under any alias). Returns how many.
        #: () -> Integer
        def install!
          found = supported? ? targets : []
          return 0 if found.empty?

          @rubygems ||= found.first[3].bind(TOPLEVEL_BINDING.receiver)
          replace(found)
          found.size
        end

        private

        def replace(found)
          verbose = $VERBOSE
          $VERBOSE = nil # redefining a method under -w warns; nothing here is a mistake
          if BACKEND == :native
            Native.lp_front(@rubygems, self) unless @native
            @native = true
            found.each do |mod, name, public, _|
              Native.lp_front_hook(mod, name, public)
              RequireHook.register(:rubygems, mod, name)
            end
          else
            hook = RubyHook
            rubygems = @rubygems
            found.each do |mod, name, public, _|
              mod.send(:define_method, name) { |feature| hook.front(feature, rubygems) }
              mod.send(:private, name) unless public
              RequireHook.register(:rubygems, mod, name)
            end
          end
        ensure
          $VERBOSE = verbose
        end

        public

        # Whether +mod+'s +name+ is the front hook.
        def hooked?(mod, name)
          RequireHook.hooked?(mod, name, :rubygems)
        end

        # Whether this RubyGems' require is one the front follows.
        def supported?
          return false unless defined?(::Gem::VERSION) && defined?(::Kernel::RUBYGEMS_ACTIVATION_MONITOR)

          version = ::Gem::Version.new(::Gem::VERSION)
          return false unless version >= ::Gem::Version.new("3.3.0") && version < ::Gem::Version.new("4.1")
          return false unless %i[find_unresolved_default_spec load_path_insert_index activated_gem_paths loaded_specs
                                 try_activate suffixes].all? { |m| ::Gem.respond_to?(m) }
          return false unless ::Gem::Specification.respond_to?(:unresolved_deps)
          return false unless ::Gem.suffixes == ["", ".rb", ".#{RbConfig::CONFIG["DLEXT"]}"]

          RequireHook.hooked?(::Kernel, :gem_original_require)
        end

        # [module, name, public?, UnboundMethod] for each entry of Kernel that is RubyGems'
        # require (Kernel#require, and the aliases decorators took of it: Zeitwerk's
        # zeitwerk_original_require when Zeitwerk came first, ...).
        def targets
          found = []
          direct = RequireHook.direct?(::Kernel) # (see RequireHook.targets)
          ::Kernel.private_instance_methods(false).each { |name| (t = target(name, false, direct)) and found << t }
          ::Kernel.public_instance_methods(false).each { |name| (t = target(name, true, direct)) and found << t }
          found
        end

        # [Kernel, name, public?, UnboundMethod] when Kernel's own +name+ is RubyGems' require
        # (which takes one argument, as the front that replaces it does).
        def target(name, public, direct)
          return nil unless RequireHook.one_argument?(::Kernel, name, direct)

          um = RequireHook.own_method(::Kernel, name)
          return nil unless um && um.original_name == :require && um.arity == 1 &&
                            FILE.match?(um.source_location&.first.to_s)

          [::Kernel, name, public, um]
        end

        # RubyGems' activation of the default gem +spec+, when its walk found no item ahead of
        # the insert index holding the name (kernel_require.rb, 3.3 to 4.0).
        def activate_default(spec)
          ::Kernel::RUBYGEMS_ACTIVATION_MONITOR.synchronize do
            ::Kernel.send(:gem, spec.name, ::Gem::Requirement.default_prerelease)
          end
          nil
        end

        # RubyGems' rescue of a LoadError for the very name it was given: activate a gem that
        # holds it and require again, else raise it. (RubyGems 3.5+ with gem discovery off
        # rescues nothing.)
        def load_error(feature, error)
          raise error if ::Gem.respond_to?(:discover_gems_on_require) && !::Gem.discover_gems_on_require
          raise error unless ::Kernel::RUBYGEMS_ACTIVATION_MONITOR.synchronize { ::Gem.try_activate(feature) }

          ::Kernel.send(:gem_original_require, feature)
        end
      end
    end
  end
end

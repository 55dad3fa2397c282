# frozen_string_literal: true

require "rake"
require_relative "rake_memo/run"
require_relative "rake_memo/hooks"

module Loadout
  # What the feature loadout/rake installs: one stat per path per run for Rake's file tasks,
  # stock Rake's decisions, no task or output of its own. The modules of Hooks, prepended to Rake's classes,
  # keep a per-run memo (Run). Rake 12.3 through 13.x; on any other version, or when a hooked
  # method was already redefined outside rake, nothing is patched and one warning is printed.
  module RakeMemo
    class << self
      # Installs the hooks once. Returns true when they are (or already were) in place.
      def install! #: () -> bool
        return @installed unless @installed.nil?

        problem = unsupported
        warn "loadout: loadout/rake has no effect: #{problem}" if problem
        return @installed = false if problem

        hooks.each { |klass, mod| klass.prepend(mod) }
        Rake::Backtrace.singleton_class.prepend(Hooks::Backtrace)
        watch
        @installed = true
      end

      private

      # [[Rake class, module prepended to it]]. FileTask#needed? changed in 13.1 (exist? + mtime
      # became mtime rescuing ENOENT, ruby/rake#393).
      def hooks
        old_shape = Gem::Version.new(Rake::VERSION) < Gem::Version.new("13.1.0")
        [[Rake::Task, Hooks::Task], [Rake::FileTask, Hooks::FileTask],
         [Rake::FileTask, old_shape ? Hooks::FileTaskExistCheck : Hooks::FileTaskMtimeRescue],
         [Rake::FileCreationTask, Hooks::FileCreationTask], [Rake::Application, Hooks::Application]]
      end

      # Why the running Rake is not one to patch, or nil.
      def unsupported #: () -> String?
        return "Rake::VERSION is not defined" unless defined?(Rake::VERSION)

        version = Rake::VERSION.to_s
        v = Gem::Version.new(version)
        supported = v >= Gem::Version.new("12.3") && v.segments.first <= 13
        return "rake #{version} is not supported (12.3 through 13.x are)" unless supported

        missing = hooked_methods.reject { |klass, m| klass.method_defined?(m) || klass.private_method_defined?(m) }
        return "rake #{version} lacks #{missing.map { |k, m| "#{k}##{m}" }.join(", ")}" unless missing.empty?

        # The stat hooks stand in for rake's code, and the lookup memo for rake's answers.
        foreign = hooked_methods.reject do |klass, m|
          file, = klass.instance_method(m).source_location
          file.nil? || file.include?("/rake/") || file.end_with?("/rake.rb")
        end
        "#{foreign.map { |k, m| "#{k}##{m}" }.join(", ")} already redefined outside rake" unless foreign.empty?
      rescue ArgumentError => e # a malformed version string
        "rake version #{version.inspect} is not understood (#{e.message})"
      end

      # [[class, method name]] for every method a hook defines.
      def hooked_methods
        hooks.flat_map { |klass, mod| mod.instance_methods(false).map { |m| [klass, m] } }
      end

      # Redefining a hooked method after install (in its class, or in TaskManager for
      # Application's) turns every hook off, with one warning: a hook would hide the new code, or
      # keep answers it may no longer give.
      def watch #: () -> void
        watched = hooked_methods
        watched += watched.filter_map { |klass, m| [Rake::TaskManager, m] if klass.equal?(Rake::Application) }
        hook = Module.new do
          define_method(:method_added) do |name|
            super(name)
            RakeMemo.__send__(:redefined, self, name) if watched.include?([self, name])
          end
        end
        watched.map(&:first).uniq.each { |klass| klass.singleton_class.prepend(hook) }
      end

      def redefined(klass, name) #: (Module, Symbol) -> void
        return if @off

        @off = true
        hooks.each { |_, mod| mod.instance_methods(false).each { |m| mod.__send__(:remove_method, m) } }
        warn "loadout: #{klass}##{name} was redefined after require \"loadout/rake\"; " \
             "loadout/rake is off for this process (require it after such patches)"
      end
    end
  end
end

# frozen_string_literal: true

require "rake"
require_relative "version"
require_relative "error"
require_relative "rake/run"
require_relative "rake/support"
require_relative "rake/file_task_patch"
require_relative "rake/task_patch"
require_relative "rake/task_patch/prerequisite_invocation"
require_relative "rake/task_patch/prerequisite_resolution"
require_relative "rake/task_manager_patch"
require_relative "rake/backtrace_patch"

module Loadout
  # `require "loadout/rake"` (in a Rakefile, or RUBYOPT=-rloadout/rake) makes Rake's FileTask
  # checks cost one stat per path per run, with exactly stock Rake's rebuild decisions, and
  # nothing else: no task, no output of its own (`rake -T` lists the same). The app tasks
  # (loadout:precompile, loadout:clean) are `require "loadout/rake_tasks"`.
  #
  # How: a handful of modules prepended to Rake::Task, Rake::FileTask, Rake::FileCreationTask and
  # Rake::Application (each file below says which stock method it stands in for and why the
  # result is the same). State lives in Run: a stat memo and a TaskManager#[] cache that exist
  # only while a Task#invoke is in flight and are thrown away after every task execution.
  # Rake 12.3 through 13.x; on any other version, or if a patched method was already redefined,
  # nothing is patched and one warning is printed.
  module Rake
    class << self
      # Installs the patches once. Returns true when they are (or already were) in place.
      def install! #: () -> bool
        return @installed unless @installed.nil?

        variant, problem = Support.check
        if problem
          warn "loadout: loadout/rake has no effect: #{problem}"
          return @installed = false
        end

        file_task = variant == :exist_check ? FileTaskPatch::ExistCheck : FileTaskPatch::MtimeRescue
        patches = {
          ::Rake::Task => [TaskPatch],
          ::Rake::FileTask => [file_task, FileTaskPatch::OutOfDate],
          ::Rake::FileCreationTask => [FileTaskPatch::Creation],
          ::Rake::Application => [TaskManagerPatch],
        }
        patches.each { |klass, mods| mods.each { |mod| klass.prepend(mod) } }
        FileTaskPatch::OutOfDate.timestamp_owners = [file_task]
        ::Rake::Backtrace.singleton_class.prepend(BacktracePatch)
        Support.watch(patches.keys + [::Rake::TaskManager], patches.values.flatten)
        @installed = true
      end

      # True when the FileTask patches are active in this process.
      def installed? #: () -> bool
        @installed == true && Run.enabled?
      end
    end
  end
end

Loadout::Rake.install!

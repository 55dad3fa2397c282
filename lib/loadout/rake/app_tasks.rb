# frozen_string_literal: true

require "fileutils"

module Loadout
  module Rake
    # The tasks `require "loadout/rake_tasks"` adds for apps:
    #
    #   rake loadout:precompile   # runs `loadout precompile` (Loadout::CLI) in-process
    #   rake loadout:clean        # removes the cache directory
    #
    # and the cache directory joins CLOBBER when the Rakefile uses rake/clean (loadout never
    # requires rake/clean itself: that would add clean/clobber tasks to every Rakefile).
    module AppTasks # :nodoc:
      DEFAULT_CACHE_DIR = "tmp/cache/loadout"

      class << self
        # $LOADOUT_CACHE_DIR, or tmp/cache/loadout under the directory rake was started in.
        def cache_dir(env = ENV, root = ::Rake.application.original_dir) #: (Hash, String) -> String
          dir = env["LOADOUT_CACHE_DIR"]
          dir = DEFAULT_CACHE_DIR if dir.nil? || dir.empty?
          File.expand_path(dir, root)
        end

        def define(app = ::Rake.application) #: (untyped) -> void
          return if app.lookup("loadout:clean")

          # Descriptions are set directly, not with `desc`: under RUBYOPT=-rloadout/rake this runs
          # before rake records descriptions, and a pending `desc` would label the Rakefile's
          # first task instead.
          tasks = self
          precompile = app.define_task(::Rake::Task, "loadout:precompile") { tasks.precompile }
          precompile.add_description("Fill loadout's caches for this app (loadout precompile)")
          clean = app.define_task(::Rake::Task, "loadout:clean") { ::Rake::FileUtilsExt.rm_rf(tasks.cache_dir) }
          clean.add_description("Remove loadout's cache directory ($LOADOUT_CACHE_DIR or tmp/cache/loadout)")
          add_to_clobber
        end

        def precompile #: () -> void
          begin
            require_relative "../cli"
          rescue LoadError => e
            raise RakeTaskError.new("loadout:precompile",
                                    "the loadout CLI is unavailable (#{e.message}); install the complete loadout gem")
          end
          status = Loadout::CLI.new(["precompile"]).run
          return if status == 0

          raise RakeTaskError.new("loadout:precompile", "`loadout precompile` exited with status #{status}")
        end

        # Adds the cache dir to CLOBBER once, if rake/clean is loaded (now or by top_level time).
        def add_to_clobber #: () -> void
          return if @clobbered || !defined?(::CLOBBER)

          ::CLOBBER.include(cache_dir)
          @clobbered = true
        end
      end

      # Prepended to Rake::Application: a Rakefile may require rake/clean after loadout/rake_tasks.
      module TopLevel
        def top_level
          AppTasks.add_to_clobber
          super
        end
      end
    end
    private_constant :AppTasks

    # Adds loadout:precompile and loadout:clean to the application (once).
    def self.define_tasks! #: () -> void
      AppTasks.define
      ::Rake::Application.prepend(AppTasks::TopLevel) unless ::Rake::Application < AppTasks::TopLevel
    end
  end
end

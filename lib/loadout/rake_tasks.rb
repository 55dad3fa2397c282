# frozen_string_literal: true

# The feature loadout/rake_tasks: loadout's tasks for apps, kept apart from the feature
# loadout/rake (RakeMemo), which must change nothing a Rakefile can see, `rake -T` included.
require "rake"
require_relative "error"

module Loadout
  # The tasks of the feature loadout/rake_tasks: loadout:precompile (`loadout precompile`, run
  # in-process) and loadout:clean (removes the cache directory), which joins CLOBBER when the
  # Rakefile uses rake/clean (never required here: it would add clean/clobber to every Rakefile).
  module RakeTasks # :nodoc:
    class << self
      # Adds loadout:precompile and loadout:clean to the application (once).
      def define! #: () -> void
        define
        Rake::Application.prepend(TopLevel) unless Rake::Application < TopLevel
      end

      # $LOADOUT_CACHE_DIR, or tmp/cache/loadout under the directory rake was started in.
      def cache_dir(env = ENV, root = Rake.application.original_dir) #: (Hash, String) -> String
        dir = env["LOADOUT_CACHE_DIR"]
        File.expand_path(dir.nil? || dir.empty? ? "tmp/cache/loadout" : dir, root)
      end

      def define(app = Rake.application) #: (untyped) -> void
        return if app.lookup("loadout:clean")

        # Descriptions are set directly, not with `desc`: under RUBYOPT=-rloadout/rake_tasks
        # this runs before rake records descriptions, and a pending `desc` would label the
        # Rakefile's first task instead.
        app.define_task(Rake::Task, "loadout:precompile") { precompile }
           .add_description("Fill loadout's caches for this app (loadout precompile)")
        app.define_task(Rake::Task, "loadout:clean") { Rake::FileUtilsExt.rm_rf(cache_dir) }
           .add_description("Remove loadout's cache directory ($LOADOUT_CACHE_DIR or tmp/cache/loadout)")
        add_to_clobber
      end

      def precompile #: () -> void
        begin
          require_relative "cli"
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
        RakeTasks.add_to_clobber
        super
      end
    end
  end
end

Loadout::RakeTasks.define!

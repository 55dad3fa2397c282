# frozen_string_literal: true

module Loadout
  # Finds the application root when none is given, the same way for the loadout/setup entry point
  # and `Loadout.setup` without root:, so that the app booted from another working directory
  # (cron, systemd, `ruby /app/bin/job`) keeps its cache keys:
  #
  # 1. the directory of BUNDLE_GEMFILE (bundler/setup and binstubs set it);
  # 2. else the nearest directory holding a Gemfile or gems.rb above the working directory;
  # 3. else the same search above the main script ($0): `ruby /app/bin/job` run from / or $HOME;
  # 4. else the working directory, or the main script's directory when there is none (deleted).
  #
  # The working directory comes before the main script: a gem's executable (`loadout`, `rake`)
  # is the main script of its process, and its own project is not the app.
  #
  # Never a caller frame: `ruby -e` and bin/ wrappers have none that means anything. Never raises:
  # nil when nothing is left to go by (a deleted working directory and no main script file).
  module AppRoot # :nodoc:
    GEMFILES = %w[Gemfile gems.rb].freeze
    # loadout's own checkout or gem dir: its executable is never the app's main script.
    OWN = File.expand_path("../..", __dir__)

    module_function

    #: (?Hash[String, String], ?String) -> String?
    def find(env = ENV, program = $PROGRAM_NAME)
      gemfile = env["BUNDLE_GEMFILE"]
      return File.dirname(absolute(gemfile)) if gemfile && !gemfile.empty? && absolute(gemfile)

      script = main_script(program)
      cwd = pwd
      script_dir = script && File.dirname(script)
      (cwd && project_of(cwd)) || (script_dir && project_of(script_dir)) || cwd || script_dir
    end

    # The main script as an absolute real path, when $0 names a file (not -e, irb, ...).
    def main_script(program)
      return nil if program.nil? || program.empty? || program.start_with?("-")

      path = absolute(program) or return nil
      return nil if path.start_with?("#{OWN}/") # `loadout check` & co.: the app is where it runs

      File.file?(path) ? File.realpath(path) : nil
    rescue SystemCallError
      nil
    end

    # The nearest directory at or above +dir+ that holds a Gemfile (or gems.rb).
    def project_of(dir)
      loop do
        return dir if GEMFILES.any? { |name| File.file?(File.join(dir, name)) }

        parent = File.dirname(dir)
        return nil if parent == dir

        dir = parent
      end
    end

    def pwd
      File.expand_path(Dir.pwd)
    rescue SystemCallError
      nil # the working directory was deleted
    end

    # +path+ made absolute, or nil when it is relative and there is no working directory.
    def absolute(path)
      File.expand_path(path)
    rescue SystemCallError
      nil
    end
  end
end

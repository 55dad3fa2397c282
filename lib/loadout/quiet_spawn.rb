# frozen_string_literal: true

require "loadout/native"

module Loadout
  # Starts a background helper (the compile cache's worker) that holds nothing of the caller's:
  # exactly the environment it is given, "/" as its working directory, stdio on /dev/null and no
  # other descriptor (a pipe or socket the app left without close-on-exec would keep whoever
  # reads its other end waiting until the helper exits). Returns its pid; signals as
  # Process.spawn leaves them (ignored ones stay ignored, so nohup still covers the helper).
  #
  # Native: posix_spawn (ext/loadout/quiet_spawn.c), which does not copy the caller; Ruby's
  # Process.spawn forks first, and for a boot that loaded 6,000 files that fork alone took 15 ms
  # of the boot's exit. The twin is Process.spawn with the same settings.
  module QuietSpawn # :nodoc:
    # Built only where the platform has posix_spawn with a chdir file action.
    @native = BACKEND == :native && Native.respond_to?(:spawn_quiet)

    # What a helper keeps of the caller's environment: what finding and running the Ruby binary
    # and its locale need. Never RUBYOPT, RUBYLIB, GEM_* or BUNDLE_* (whatever the app preloads
    # with -r would be loaded into the helper too), nor LD_PRELOAD.
    KEPT = %w[PATH HOME TMPDIR TZ LANG LANGUAGE LD_LIBRARY_PATH DYLD_LIBRARY_PATH].freeze

    # The environment for a helper: the KEPT variables (and LC_*) of ENV, plus +extra+.
    #: (Hash[String, String]) -> Hash[String, String]
    def self.environment(extra)
      ENV.to_h.select { |name, _| KEPT.include?(name) || name.start_with?("LC_") }.merge(extra)
    end

    # +env+: the child's whole environment ({ "NAME" => "value" }); +argv+: the command, argv[0]
    # an absolute path. Raises SystemCallError when the child cannot be started.
    #: (Hash[String, String], Array[String]) -> Integer
    def self.call(env, argv)
      unless argv[0].to_s.start_with?("/")
        raise ArgumentError, "QuietSpawn: argv[0] must be an absolute path, got #{argv[0].inspect}"
      end

      if @native
        Native.spawn_quiet(argv, env.map { |name, value| "#{name}=#{value}" }, "/")
      else
        Process.spawn(env, *argv, in: File::NULL, out: File::NULL, err: File::NULL, chdir: "/",
                                  unsetenv_others: true, close_others: true)
      end
    end
  end
end

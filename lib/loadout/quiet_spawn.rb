# frozen_string_literal: true

require "loadout/native"

module Loadout
  # Starts a background helper (the compile cache's worker) with its stdio on /dev/null and the
  # caller's environment plus +env+, and returns its pid; signals as Process.spawn leaves them
  # (ignored ones stay ignored, so nohup still covers the helper).
  #
  # Native: posix_spawn (ext/loadout/quiet_spawn.c), which does not copy the caller; Ruby's
  # Process.spawn forks first, and for a boot that loaded 6,000 files that fork alone took 15 ms
  # of the boot's exit. The twin is Process.spawn with the same settings.
  module QuietSpawn # :nodoc:
    # Built only where the platform has posix_spawn.
    @native = BACKEND == :native && Native.respond_to?(:spawn_quiet)

    # +env+: variables to add ({ "NAME" => "value" }); +argv+: the command, argv[0] an absolute
    # path. Raises SystemCallError when the child cannot be started.
    #: (Hash[String, String], Array[String]) -> Integer
    def self.call(env, argv)
      unless argv[0].to_s.start_with?("/")
        raise ArgumentError, "QuietSpawn: argv[0] must be an absolute path, got #{argv[0].inspect}"
      end

      if @native
        Native.spawn_quiet(argv, env.map { |name, value| "#{name}=#{value}" })
      else
        Process.spawn(env, *argv, in: File::NULL, out: File::NULL, err: File::NULL)
      end
    end
  end
end

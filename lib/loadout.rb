# frozen_string_literal: true

require "loadout/version"
require "loadout/error"
require "loadout/native"
require "loadout/instrumentation"

# loadout makes Ruby processes start and build fast by removing redundant filesystem and
# compile work. See README.md for the public API; anything not documented there is internal.
module Loadout
  autoload :Scan, "loadout/scan"
  autoload :LoadPath, "loadout/load_path"
  autoload :Require, "loadout/require"
  autoload :Store, "loadout/store"
  autoload :CompileCache, "loadout/compile_cache"
  autoload :Journal, "loadout/journal"
  autoload :Config, "loadout/config"
  autoload :Boot, "loadout/boot"
  autoload :Stats, "loadout/stats"
  autoload :SelfCache, "loadout/self_cache"
  autoload :CLI, "loadout/cli"
  autoload :LastBoot, File.expand_path("loadout/last_boot", __dir__)
  autoload :LoadedFiles, File.expand_path("loadout/loaded_files", __dir__)

  class << self
    # Turns loadout on for this process (see README "Usage"); bad options raise ConfigError.
    # Returns true, or false when an earlier call already set up (see Boot.setup).
    #: (**untyped) -> bool
    def setup(**options)
      __boot(Config.new(**options))
    end

    # Boot.setup(config), with loadout's own files served from its self cache meanwhile.
    def __boot(config) # :nodoc:
      SelfCache.around(config) { Boot.setup(config) }
    end

    # Prints every cache event to +io+ (stderr by default); also LOADOUT_LOG=1.
    #: (?IO) -> void
    def log!(io = $stderr)
      Stats.log!(io)
    end
  end
end

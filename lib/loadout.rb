# frozen_string_literal: true

require_relative "loadout/version"
require_relative "loadout/error"
require_relative "loadout/native"
require_relative "loadout/instrumentation"

# loadout makes Ruby processes start and build fast by removing redundant filesystem and
# compile work. See README.md for the public API; anything not documented there is internal.
module Loadout
  autoload :Scan, File.expand_path("loadout/scan", __dir__)
  autoload :LoadPath, File.expand_path("loadout/load_path", __dir__)
  autoload :Store, File.expand_path("loadout/store", __dir__)
  autoload :CompileCache, File.expand_path("loadout/compile_cache", __dir__)
  autoload :Journal, File.expand_path("loadout/journal", __dir__)
  autoload :Config, File.expand_path("loadout/config", __dir__)
  autoload :Boot, File.expand_path("loadout/boot", __dir__)
  autoload :Stats, File.expand_path("loadout/stats", __dir__)
  autoload :SelfCache, File.expand_path("loadout/self_cache", __dir__)
  autoload :CLI, File.expand_path("loadout/cli", __dir__)
  autoload :Eviction, File.expand_path("loadout/eviction", __dir__)
  autoload :Trust, File.expand_path("loadout/trust", __dir__)
  autoload :LastBoot, File.expand_path("loadout/last_boot", __dir__)
  autoload :LoadedFiles, File.expand_path("loadout/loaded_files", __dir__)

  class << self
    # Turns loadout on for this process (see README "Usage"); bad options raise ConfigError.
    # Returns true, or false when an earlier call already set up (see Boot.setup), when the
    # config says loadout cannot run here (one warning), or when CRuby runs without the
    # extension (Native.missing: warned when loadout was loaded).
    #: (**untyped) -> bool
    def setup(**options)
      __boot(Config.new(**options))
    end

    # Boot.setup(config), with loadout's own files served from its self cache meanwhile.
    def __boot(config) # :nodoc:
      if config.problem
        warn "loadout: #{config.problem}; running without loadout"
        return false
      end
      return false if Native.missing # (said when loadout was loaded: plain Ruby)

      # A second setup call loads nothing (Boot keeps the first): no self cache to read. (Boot
      # is looked at only once loaded: loading it here would compile it outside the self cache.)
      return Boot.setup(config) if autoload?(:Boot).nil? && Boot.config
      # Read-only with no store to read (an image built without `loadout precompile`): nothing to
      # serve, and Boot would find that out only after loading a dozen files of its own (5% of a
      # small app's boot). Unless someone watches (stats, log), this boot is plain Ruby's.
      return false if config.readonly && !config.stats && !config.log && !File.file?(config.store_path.to_s)

      SelfCache.around(config) { Boot.setup(config) }
    end

    # Prints every cache event to +io+ (stderr by default); also LOADOUT_LOG=1.
    #: (?IO) -> void
    def log!(io = $stderr)
      Stats.log!(io)
    end
  end
end

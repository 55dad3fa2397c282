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
end

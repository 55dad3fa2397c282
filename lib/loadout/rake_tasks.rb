# frozen_string_literal: true

# A Rakefile that loads this file (the feature loadout/rake_tasks) gets loadout's tasks for apps:
#
#   rake loadout:precompile   # fill the caches for this app (`loadout precompile`)
#   rake loadout:clean        # remove the cache directory ($LOADOUT_CACHE_DIR or tmp/cache/loadout)
#
# and puts the cache directory in CLOBBER when the Rakefile uses rake/clean. It is kept apart
# from the feature loadout/rake (the FileTask accelerator), which must change nothing a Rakefile
# can see, `rake -T` included.
require "rake"
require_relative "error"
require_relative "rake/app_tasks"

Loadout::Rake.define_tasks!

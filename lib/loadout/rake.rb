# frozen_string_literal: true

# The feature loadout/rake (`require "loadout/rake"` in a Rakefile, or RUBYOPT=-rloadout/rake):
# Rake's file tasks stat each path once per run (RakeMemo).
require_relative "rake_memo"

Loadout::RakeMemo.install!

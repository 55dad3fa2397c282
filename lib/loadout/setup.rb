# frozen_string_literal: true

# `require "loadout/setup"` right after `require "bundler/setup"` (Rails: config/boot.rb) turns
# loadout on with settings taken from the environment (Loadout::Env). Requiring this file is the
# act of setting up; no other file of loadout's does anything when required.

require_relative "env"

Loadout::Env.run

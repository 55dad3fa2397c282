# frozen_string_literal: true

# The feature loadout/rake_tasks: loadout's tasks for apps (rake/app_tasks.rb), kept apart from
# the feature loadout/rake, which must change nothing a Rakefile can see, `rake -T` included.
require "rake"
require_relative "error"
require_relative "rake/app_tasks"

Loadout::Rake.define_tasks!

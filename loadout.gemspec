# frozen_string_literal: true

require_relative "lib/loadout/version"

Gem::Specification.new do |spec|
  spec.name = "loadout"
  spec.version = Loadout::VERSION
  spec.authors = ["loadout developers"]
  spec.summary = "Fast Ruby boots: a persisted load-path index, compile caches and a crash-safe store"
  spec.description = <<~DESC
    loadout removes redundant filesystem and compile work from Ruby processes: require is resolved
    from a persisted feature index, ISeq/YAML/JSON results are cached in a crash-safe append-only
    store, and Rake file tasks stat each path once per run.
  DESC
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1" # String#unpack(offset:); CI runs 3.1 and 3.3 (README "Supported Rubies")

  spec.files = Dir["lib/**/*.rb", "ext/**/*.{c,h,rb}", "exe/*", "README.md", "CHANGELOG.md", "LICENSE.txt", "docs/*.md"]
  spec.bindir = "exe"
  spec.executables = ["loadout"]
  spec.require_paths = ["lib"]
  # The extension is optional: off CRuby extconf writes a no-op Makefile and the Ruby twins are used.
  spec.extensions = ["ext/loadout/extconf.rb"] unless RUBY_ENGINE == "jruby"
  spec.metadata["rubygems_mfa_required"] = "true"
end

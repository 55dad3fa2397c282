# frozen_string_literal: true

require "test_helper"

# The compile cache's names say what each piece is, and its docs describe the code as it is:
# no constant inside Loadout shadows a library's, and no description of a mechanism that is gone
# survives in the README, the architecture notes or the code.
class CompileCacheNamesTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  SHADOWED = %i[JSON YAML Psych Digest MessagePack].freeze
  # Phrases that described mechanisms removed from the compile cache.
  GONE = [
    "background compiler",       # the worker that recompiled misses after exit
    ".capture` for its life",     # the flock lease on <store>.capture
    "store>.capture",
    "into the deferred writes",   # captures are claimed at once, not deferred
    "miss_compile",               # the :exit mode
    "Writer#at_run", "CompileCache::Writer", "context.writer",
    "stat_lookup"                 # the C judge calling back into Ruby for the stat record
  ].freeze

  # Every constant under +mod+ (loading the compile cache's autoloads), with its full name.
  def constants_under(mod, seen = {})
    mod.constants(false).each do |name|
      next if mod.autoload?(name) && !mod.name.start_with?("Loadout::CompileCache") && mod != Loadout

      value = mod.const_get(name, false)
      next unless value.is_a?(Module) && value.name&.start_with?("Loadout") && !seen.key?(value)

      seen[value] = true
      constants_under(value, seen)
    end
    seen.keys
  end

  test "no constant inside Loadout is named like a library (JSON, YAML, Psych, Digest, MessagePack)" do
    require "loadout/compile_cache"
    Loadout::CompileCache.constants.each { |c| Loadout::CompileCache.const_get(c) }
    shadowing = constants_under(Loadout).select { |m| SHADOWED.include?(m.name.split("::").last.to_sym) }
    assert_empty shadowing.map(&:name)
    assert_empty Dir[File.join(ROOT, "lib/**/*.rb")].select { |f| File.read(f).include?("::JSON") },
                 "with no Loadout::...::JSON in the way, no file needs to write ::JSON"
  end

  test "no description of a removed compile cache mechanism is left in the docs or the code" do
    files = %w[README.md docs/ARCHITECTURE.md lib/loadout/compile_cache.rb lib/loadout/self_cache.rb
               lib/loadout/loaded_files.rb lib/loadout/boot.rb bench/compile_cache.rb].map { |f| File.join(ROOT, f) } +
            Dir[File.join(ROOT, "lib/loadout/compile_cache/*.rb")] + Dir[File.join(ROOT, "ext/loadout/*.{c,h}")]
    found = files.flat_map do |file|
      text = File.read(file)
      GONE.select { |phrase| text.include?(phrase) }.map { |phrase| "#{file.delete_prefix("#{ROOT}/")}: #{phrase}" }
    end
    assert_empty found
  end
end

# frozen_string_literal: true

require "test_helper"
require "yaml"
require "support/compile_cache_values"

# I18n loads locale files with YAML.unsafe_load_file(path, symbolize_names: true, freeze: true).
# Psych then deduplicates equal Strings (String#-@), so Rails' own
# active_support/locale/en.yml ("May" twice, "," and "." in several formats) was one value the
# YAML cache never stored ("unfaithful"): a miss on every boot of every Rails app.
class FrozenLocaleTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheValues

  LOCALE = <<~YAML
    en:
      date:
        abbr_month_names: [~, Jan, Feb, Mar, Apr, May, Jun]
        month_names: [~, January, February, March, April, May, June]
      number:
        format: {delimiter: ",", separator: ".", precision: 3}
        currency:
          format: {delimiter: ",", separator: ".", unit: "$", format: "%u%n"}
        human:
          decimal_units: {format: "%n %u", units: {unit: ""}}
          storage_units: {format: "%n %u"}
  YAML

  # An app without the msgpack gem (the Rails test app's bundle has none): values go to Marshal,
  # after Fidelity's round-trip check.
  def without_msgpack
    serializer = Loadout::CompileCache::Serializer
    saved = serializer.instance_variable_get(:@msgpack)
    serializer.instance_variable_set(:@msgpack, false)
    yield
  ensure
    serializer.instance_variable_set(:@msgpack, saved)
  end

  test "a frozen locale with repeated strings is stored and served (Marshal), equal to Psych's value" do
    without_msgpack { assert_cached_locale }
  end

  test "the same with msgpack" do
    assert_cached_locale
  end

  def assert_cached_locale
    with_value_cache([["en.yml", LOCALE]], [:yaml]) do |dir, _|
      path = File.join(dir, "en.yml")
      expected = outcome { uncached(Psych, :unsafe_load_file, path, symbolize_names: true, freeze: true) }
      3.times { assert_equal expected, outcome { YAML.unsafe_load_file(path, symbolize_names: true, freeze: true) } }
      stats = Loadout::CompileCache.stats[:yaml]
      assert_equal({ hits: 2, misses: 1, skipped: 0 }, stats.slice(:hits, :misses, :skipped), stats.inspect)
    end
  end
end

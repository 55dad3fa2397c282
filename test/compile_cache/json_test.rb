# frozen_string_literal: true

require "test_helper"
require "json"
require "support/compile_cache_values"

# A caller-chosen object_class (OpenStruct's role, without ostruct: no longer a default gem in Ruby 3.5).
class JsonTestRecord
  def initialize
    @fields = {}
  end

  def []=(key, value)
    @fields[key] = value
  end
end

class CompileCacheJsonTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheValues

  # The suite runs with -w, which shows deprecation warnings: json 2.13 and later (Ruby 4.0's
  # 2.18) warn about duplicate keys while they parse, so the cache leaves every call to JSON then
  # (JSONHandler#parse_may_warn?, shown in json_versions_test). These tests are about what the
  # cache serves: at Ruby's default warning settings.
  def setup
    @deprecated = Warning[:deprecated]
    Warning[:deprecated] = false
  end

  def teardown
    Warning[:deprecated] = @deprecated
  end

  DOCS = {
    "data.json" => '{"s": "héllo", "i": 42, "f": 1.5, "e": 1e300, "n": null, "b": [true, false], ' \
                   '"nested": {"x": {"y": [1, 2, "z"]}}, "dup": "v", "esc": "\u00e9\n"}',
    "array.json" => '[1, "two", {"three": 3}]',
    "scalar.json" => '"just a string"',
    "nan.json" => '{"x": NaN}',
    "deep.json" => "#{"[" * 5}1#{"]" * 5}",
    "bad.json" => '{"a": [1, 2}',
    "empty.json" => "",
    "unicode_keys.json" => %({"\u65e5\u672c": 1, "\u0f63\u0f7c": [2], "ascii": 3})
  }.freeze

  OPTION_SETS = [
    {}, { symbolize_names: true }, { freeze: true }, { symbolize_names: true, freeze: true },
    { allow_nan: true }, { max_nesting: 3 }, { max_nesting: false }, { create_additions: false }, nil
  ].freeze

  def check_method(name)
    with_value_cache(DOCS.to_a, [:json]) do |dir, _store|
      DOCS.each_key do |file|
        path = File.join(dir, file)
        OPTION_SETS.each do |opts|
          args = opts.nil? ? [path, nil] : [path, opts]
          fresh = outcome { uncached(JSON, name, *args) }
          miss = outcome { JSON.public_send(name, *args) }
          hit = outcome { JSON.public_send(name, *args) }
          assert_equal fresh, miss, "#{name}(#{file}, #{opts.inspect})"
          assert_equal fresh, hit, "#{name}(#{file}, #{opts.inspect})"
        end
      end
      assert_operator Loadout::CompileCache.stats[:json][:hits], :>, OPTION_SETS.size * 2
    end
  end

  test "load_file with every option matches JSON exactly, errors included" do
    check_method(:load_file)
  end

  test "load_file! matches JSON exactly" do
    check_method(:load_file!)
  end

  test "keyword-style options are the same option set as a positional hash" do
    with_value_cache([["a.json", '{"a": 1}']], [:json]) do |dir, _|
      path = File.join(dir, "a.json")
      assert_equal({ a: 1 }, JSON.load_file(path, { symbolize_names: true }))
      assert_equal({ a: 1 }, JSON.load_file(path, symbolize_names: true))
      assert_equal({ "a" => 1 }, JSON.load_file(path))
      assert_equal({ hits: 1, misses: 2 }, Loadout::CompileCache.stats[:json].slice(:hits, :misses))
    end
  end

  test "an options Hash changed by the caller after a call is read again, not remembered" do
    with_value_cache([["a.json", '{"a": 1}']], [:json]) do |dir, _|
      path = File.join(dir, "a.json")
      opts = { symbolize_names: true }
      2.times { assert_equal({ a: 1 }, JSON.load_file(path, opts)) }
      opts[:symbolize_names] = false
      2.times { assert_equal({ "a" => 1 }, JSON.load_file(path, opts)) }
      opts[:freeze] = true
      assert JSON.load_file(path, opts).frozen?
      assert_equal({ hits: 2, misses: 3 }, Loadout::CompileCache.stats[:json].slice(:hits, :misses))
    end
  end

  test "options that build caller-chosen classes bypass the cache" do
    with_value_cache([["a.json", '{"a": [1]}']], [:json]) do |dir, store|
      path = File.join(dir, "a.json")
      2.times do
        assert_kind_of JsonTestRecord, JSON.load_file(path, object_class: JsonTestRecord)
        assert_equal({ "a" => [1] }, JSON.load_file(path, create_additions: true))
      end
      assert_equal 4, Loadout::CompileCache.stats[:json][:skipped]
      assert_empty store.keys
    end
  end

  test "a parse error is raised as JSON raises it and nothing is cached" do
    with_value_cache([["bad.json", DOCS["bad.json"]]], [:json]) do |dir, store|
      path = File.join(dir, "bad.json")
      expected = outcome { uncached(JSON, :load_file, path) }
      2.times { assert_equal expected, outcome { JSON.load_file(path) } }
      assert_equal :raise, expected[0]
      assert_empty store.keys
    end
  end

  test "a missing file raises the same Errno as without the cache" do
    with_value_cache([], [:json]) do |dir, _|
      path = File.join(dir, "missing.json")
      assert_equal outcome { uncached(JSON, :load_file, path) }, outcome { JSON.load_file(path) }
    end
  end
end

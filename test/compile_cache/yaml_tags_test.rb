# frozen_string_literal: true

require "test_helper"
require "yaml"
require "support/compile_cache_values"
require "loadout/compile_cache/yaml_tags"

class YamlTagsTestPoint
  attr_reader :x, :y

  def init_with(coder)
    @x = coder["x"]
    @y = coder["y"]
  end
end

# With custom Psych tags registered (as Rails registers them), YAML files without tags are still
# served from the cache and give exactly what Psych gives; a file that uses a tag is left to Psych.
# The locale files are the real ones of Rails 7.2 and rails-i18n (bin/setup-deps installs them
# into vendor/side-gems).
class YamlTagsTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheValues

  SIDE_GEMS = File.expand_path("../../vendor/side-gems/gems", __dir__)
  # What Rails 7.2 puts in Psych.load_tags (activesupport, actionpack, activerecord).
  RAILS_TAGS = {
    "!ruby/object:ActiveSupport::TimeWithZone" => "ActiveSupport::TimeWithZone",
    "!ruby/hash-with-ivars:ActionController::Parameters" => "ActionController::Parameters",
    "!ruby/hash:ActionController::Parameters" => "ActionController::Parameters",
    "!ruby/object:ActiveRecord::AttributeSet" => "ActiveModel::AttributeSet",
    "!ruby/object:ActiveRecord::Attribute::FromDatabase" => "ActiveModel::Attribute::FromDatabase",
    "!ruby/object:ActiveRecord::LazyAttributeHash" => "ActiveModel::LazyAttributeHash"
  }.freeze
  # I18n 1.14's load_yml, then what an app's own code typically calls.
  SHAPES = [[:unsafe_load_file, { symbolize_names: true, freeze: true }], [:load_file, {}],
            [:safe_load_file, {}]].freeze

  def locale_files
    files = Dir[File.join(SIDE_GEMS, "{activesupport,activemodel,activerecord,actionview}-7.2.3/lib/*/locale/*.yml")] +
            Dir[File.join(SIDE_GEMS, "rails-i18n-7.0.10/rails/locale/*.yml")]
    assert_operator files.size, :>=, 100, "Rails locale files missing from #{SIDE_GEMS}: run bin/setup-deps"
    files.sort
  end

  def with_tags(tags, domain_types = {})
    saved = [Psych.load_tags, Psych.domain_types]
    Psych.load_tags = Psych.load_tags.merge(tags)
    Psych.domain_types = Psych.domain_types.merge(domain_types)
    yield
  ensure
    Psych.load_tags, Psych.domain_types = saved
  end

  def stats
    Loadout::CompileCache.stats[:yaml]
  end

  test "every Rails and rails-i18n locale file is served with Rails' tags registered, equal to Psych's result" do
    files = locale_files
    with_value_cache([], [:yaml]) do |_dir, store|
      with_tags(RAILS_TAGS) do
        loaded = files.sum do |path|
          SHAPES.count do |method, kw|
            fresh = outcome { uncached(Psych, method, path, **kw) }
            2.times { assert_equal fresh, outcome { YAML.public_send(method, path, **kw) }, "#{method} #{path}" }
            fresh[0] == :ok # safe_load_file refuses the Symbols some locales use (date.order: [:day, ...])
          end
        end
        assert_operator loaded, :>=, files.size * 2
        assert_equal loaded, stats[:hits] + stats[:revalidated], stats.inspect
        assert_equal loaded, store.keys.grep(%r{\Acc/y/}).size
      end
      assert_equal 0, stats[:skipped], stats.inspect
    end
  end

  DOCS = {
    "plain.yml" => "a: 1\nb: Hello!\n",
    "french.yml" => "a: Bonjour !\nb: [x, y]\n",
    "point.yml" => "p: !loadout/point\n  x: 1\n  y: 2\n",
    "string_tag.yml" => "a: !s foo\n",
    "rails_tag.yml" => "t: !ruby/hash:ActionController::Parameters {a: 1}\n",
    "domain.yml" => "d: !<tag:example.com,2024:pt> 3\n"
  }.freeze
  TAGS = { "!loadout/point" => "YamlTagsTestPoint", "!s" => "String" }.freeze
  DOMAIN = { "tag:example.com,2024:pt" => ["tag:example.com,2024:pt", ->(_type, value) { [:pt, value] }] }.freeze

  def check_all(dir, method = :unsafe_load_file)
    DOCS.each_key do |file|
      path = File.join(dir, file)
      fresh = outcome { uncached(Psych, method, path) }
      2.times { assert_equal fresh, outcome { YAML.public_send(method, path) }, "#{method} #{file}" }
    end
  end

  test "a file that uses a tag is left to Psych while custom tags are registered, and only then" do
    with_value_cache(DOCS.to_a, [:yaml]) do |dir, store|
      with_tags(TAGS, DOMAIN) { check_all(dir) }
      assert_equal 2, stats[:hits] + stats[:revalidated] # plain.yml and french.yml, second call
      assert_equal 8, stats[:reasons][:custom_tags], stats.inspect # four tagged files, twice each
      assert_equal 2, store.keys.grep(%r{\Acc/y/}).size
    end
  end

  test "an entry stored while no tags were registered is not served for a tagged file once they are" do
    with_value_cache(DOCS.to_a, [:yaml]) do |dir, store|
      check_all(dir) # no custom tags: every readable file is cached, tagged ones too
      stored = store.keys.grep(%r{\Acc/y/}).size
      assert_operator stored, :>=, 5
      with_tags(TAGS, DOMAIN) do
        check_all(dir) # "!s foo" is "" now, the point a YamlTagsTestPoint, the domain type [:pt, 3]
        assert_instance_of YamlTagsTestPoint, YAML.unsafe_load_file(File.join(dir, "point.yml"))["p"]
        assert_equal "", YAML.unsafe_load_file(File.join(dir, "string_tag.yml"))["a"]
      end
      check_all(dir) # and back: the cached entries serve again
      assert_equal "foo", YAML.unsafe_load_file(File.join(dir, "string_tag.yml"))["a"]
    end
  end

  test "a load_tags table that answers for untagged nodes (a default) turns the cache off" do
    with_value_cache(DOCS.to_a, [:yaml]) do |dir, store|
      saved = Psych.load_tags
      Psych.load_tags = Hash.new("YamlTagsTestPoint")
      check_all(dir)
      assert_empty store.keys
      assert_equal 2 * DOCS.size, stats[:reasons][:custom_tags]
    ensure
      Psych.load_tags = saved
    end
  end

  test "tag_free? is never wrong: random YAML-like text is tag-free only when libyaml sees no tag" do
    rng = Random.new(20_261_125)
    pieces = ["!", "!", "!!", "!<x>", "&a", "*a", ":", ": ", "- ", "? ", "#", " ", "  ", "\n", "\t", "'", "\"", "[",
              "]", "{", "}", ",", "a", "b1", "|", ">", "%TAG ! tag:x,1:\n", "---", "...", "\u00e9", "\u3042", "\r\n",
              "\u2028", "x!"]
    tagged = ->(node) { node.tag || node.children&.any?(&tagged) }
    checked = 0
    20_000.times do
      text = Array.new(rng.rand(1..14)) { pieces[rng.rand(pieces.size)] }.join
      next unless Loadout::CompileCache::YAMLTags.tag_free?(text.b)

      stream = begin
        Psych.parse_stream(text)
      rescue Psych::SyntaxError
        next # nothing loads, nothing is cached
      end
      checked += 1
      refute tagged.call(stream), "tag_free? said yes to #{text.inspect}"
    end
    assert_operator checked, :>, 2_000
  end

  test "tag_free? on chosen sources" do
    free = ["a: 1", "a: Hello!", "a: Bonjour !", "a: |\n  !text\n", "a: b #!c", "\xEF\xBB\xBFa: b !", "a: 'x!' ", ""]
    tagged = ["a: !foo 1", "--- !ruby/object:Foo {}", "\xEF\xBB\xBF!x 1", "- !!str 3", "a: [b, !c d]", "a: &x !t 1",
              "%TAG !e! tag:e.com,2000:\n---\n!e!foo 1", "{\"a\":!x 1}", "! a", "a: !<tag:x> 1",
              "\xFF\xFEa\x00:\x00 \x00!\x00x\x00", "a: \xFF bad !"]
    free.each { |s| assert Loadout::CompileCache::YAMLTags.tag_free?(s.b), s.inspect }
    tagged.each { |s| refute Loadout::CompileCache::YAMLTags.tag_free?(s.b), s.inspect }
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/differential"

# Gem activation on demand must be exactly what RubyGems does without loadout. The children run
# without Bundler, on a private GEM_HOME holding gems written by hand (a gemspec + a lib dir).
class RequireRubyGemsTest < Minitest::Test
  include Loadout::TestSupport::Differential

  def gem_files(name, version, files, deps: {})
    dep_lines = deps.map { |n, req| "s.add_runtime_dependency #{n.dump}, #{req.dump}" }.join("\n")
    spec = <<~RUBY
      Gem::Specification.new do |s|
        s.name = #{name.dump}
        s.version = #{version.dump}
        s.summary = "test gem"
        s.authors = ["loadout"]
        s.files = #{files.map(&:first).inspect}
        s.require_paths = ["lib"]
        #{dep_lines}
      end
    RUBY
    [["specifications/#{name}-#{version}.gemspec", spec]] +
      files.map { |path, body| ["gems/#{name}-#{version}/#{path}", body] }
  end

  def with_gem_home
    files = gem_files("alpha", "1.0", [["lib/alpha.rb", "puts 'alpha 1.0'"],
                                       ["lib/alpha/extra.rb", "puts 'alpha extra'"]]) +
            gem_files("alpha", "2.0", [["lib/alpha.rb", "puts 'alpha 2.0'"],
                                       ["lib/alpha/extra.rb", "puts 'alpha 2 extra'"]]) +
            gem_files("beta", "1.0", [["lib/beta.rb", "puts 'beta'; require 'alpha'"]], deps: { "alpha" => "< 2" }) +
            gem_files("gamma", "1.0", [["lib/gamma_only.rb", "puts 'gamma'"]])
    with_files(files) do |home|
      env = { "GEM_HOME" => home, "GEM_PATH" => home, "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil,
              "BUNDLER_SETUP" => nil, "BUNDLE_BIN_PATH" => nil }
      yield home, env
    end
  end

  REPORT = <<~'RUBY'
    check(:loaded_specs) { Gem.loaded_specs.values.map(&:full_name).sort }
    check(:gem_paths_on_load_path) { $LOAD_PATH.grep(%r{/gems/}).map { |p| p.sub(%r{.*/gems/}, "") } }
  RUBY

  test "a gem is activated by require on demand, its files then resolve" do
    with_gem_home do |_home, env|
      _, with = assert_same_behaviour(<<~RUBY, env: env)
        check(:gamma) { require "gamma_only" }
        check(:alpha) { require "alpha" }
        check(:extra) { require "alpha/extra" }
        check(:missing) { require "not_in_any_gem" }
        #{REPORT}
      RUBY
      assert_equal "gamma\nalpha 2.0\nalpha 2 extra\n", with.stdout
      # gamma_only, alpha and not_in_any_gem are index misses (no $LOAD_PATH scan): the hook sits
      # under RubyGems' require, which catches the LoadError and activates a gem for the first
      # two, then requires again: hits, from the activated gem's new $LOAD_PATH item.
      assert_index_used(with, hits: 3, misses: 3)
      assert_equal 0, with.stats[:fallbacks], with.stats.inspect
    end
  end

  test "gem dependencies left unresolved are activated by RubyGems at the right version" do
    with_gem_home do |_home, env|
      assert_same_behaviour(<<~RUBY, env: env)
        check(:gem) { gem "beta" }
        check(:beta) { require "beta" }
        check(:extra) { require "alpha/extra" }
        #{REPORT}
      RUBY
    end
  end

  test "default gems are activated like RubyGems does" do
    with_gem_home do |_home, env|
      assert_same_behaviour(<<~RUBY, env: env)
        check(:json) { require "json" }
        check(:ostruct) { require "ostruct" }
        check(:again) { require "json" }
        check(:spec) { Gem.loaded_specs.key?("json") }
        #{REPORT}
      RUBY
    end
  end

  test "under Bundler a miss raises without a $LOAD_PATH scan, with RubyGems' LoadError" do
    # This child keeps the bundle environment the suite runs in (bundler/setup).
    _, with = assert_same_behaviour(<<~RUBY)
      check(:miss) { require "not_in_the_bundle" }
      check(:miss_again) { require "not_in_the_bundle/either" }
    RUBY
    assert_index_used(with, hits: 0, misses: 2)
  end
end

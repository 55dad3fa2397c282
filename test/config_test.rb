# frozen_string_literal: true

require "test_helper"
require "pathname"
require "loadout/config"

class ConfigTest < Minitest::Test
  def config(**kw)
    Loadout::Config.new(cache_dir: "tmp/cache/loadout", root: "/app", **kw)
  end

  def assert_rejected(option, value, accepted_fragment)
    error = assert_raises(Loadout::ConfigError) { config(option => value) }
    assert_equal option, error.name
    assert_match(/\A#{option}: /, error.message)
    assert_includes error.message, accepted_fragment
    error
  end

  test "defaults" do
    c = config
    assert_equal "/app/tmp/cache/loadout", c.cache_dir
    assert_equal "/app", c.root
    assert_equal "/app/tmp/cache/loadout/store", c.store_path
    assert_equal true, c.load_path_cache
    assert_equal %i[iseq yaml json], c.compile_cache
    assert_equal true, c.development_mode
    assert_equal false, c.readonly
    assert_nil c.trust
    assert_equal ["node_modules"], c.ignore_directories
    assert_equal false, c.log
    assert_equal false, c.stats
  end

  test "the value is frozen, deeply" do
    c = config(ignore_directories: ["vendor"])
    assert c.frozen?
    assert c.compile_cache.frozen?
    assert c.ignore_directories.frozen?
    assert c.ignore_directories.first.frozen?
    assert c.roots.frozen?
    assert_raises(FrozenError) { c.instance_variable_set(:@readonly, true) }
  end

  test "cache_dir is required" do
    error = assert_raises(Loadout::ConfigError) { Loadout::Config.new }
    assert_equal :cache_dir, error.name
    assert_includes error.message, "required"
  end

  test "cache_dir is expanded against root, Pathnames accepted" do
    assert_equal "/app/cache", config(cache_dir: "cache").cache_dir
    assert_equal "/srv/cache", config(cache_dir: "/srv/cache").cache_dir
    assert_equal "/app/c", config(cache_dir: Pathname("c")).cache_dir
    assert_equal "/srv/x", config(cache_dir: "../srv/x").cache_dir
  end

  test "root defaults to the working directory" do
    c = Loadout::Config.new(cache_dir: "c")
    assert_equal File.expand_path(Dir.pwd), c.root
    assert_equal File.join(Dir.pwd, "c"), c.cache_dir
  end

  test "bad cache_dir and root values name the option" do
    assert_rejected(:cache_dir, 42, "path String")
    assert_rejected(:cache_dir, "", "path String")
    assert_rejected(:cache_dir, "a\0b", "path String")
    assert_rejected(:root, :app, "path String")
  end

  test "an unknown option names itself and lists the accepted ones" do
    error = assert_raises(Loadout::ConfigError) { config(cache_directory: "x") }
    assert_equal :cache_directory, error.name
    assert_includes error.message, "cache_directory is unknown"
    Loadout::Config::OPTIONS.each { |name| assert_includes error.message, name.to_s }
  end

  %i[load_path_cache development_mode readonly log stats].each do |option|
    test "#{option} accepts true and false only" do
      assert_equal true, config(option => true).public_send(option)
      assert_equal false, config(option => false).public_send(option)
      [nil, "true", 1, :yes].each { |bad| assert_rejected(option, bad, "true or false") }
    end
  end

  test "compile_cache: true, false or a list of kinds in canonical order" do
    assert_equal %i[iseq yaml json], config(compile_cache: true).compile_cache
    assert_equal [], config(compile_cache: false).compile_cache
    refute config(compile_cache: false).compile_cache?
    assert_equal %i[iseq json], config(compile_cache: %i[json iseq]).compile_cache
    assert_equal %i[yaml], config(compile_cache: ["yaml"]).compile_cache
    assert_equal [], config(compile_cache: []).compile_cache
  end

  test "compile_cache rejects unknown kinds and other types" do
    [[:iseq, :msgpack], :iseq, "iseq", nil, [1]].each do |bad|
      error = assert_rejected(:compile_cache, bad, ":iseq, :yaml, :json")
      assert_includes error.message, "true, false"
    end
  end

  test "trust: nil (component default), :none, :stable or :all" do
    assert_nil config(trust: nil).trust
    assert_nil config(trust: false).trust
    assert_equal :none, config(trust: :none).trust
    assert_equal :stable, config(trust: :stable).trust
    assert_equal :stable, config(trust: "stable").trust
    assert_equal :all, config(trust: :all).trust
    assert_equal [nil, nil, :stable, :stable],
                 [nil, :none, :stable, :all].map { |t| config(trust: t).compile_cache_trust }
    assert_rejected(:trust, :everything, ":stable")
    assert_rejected(:trust, true, ":all")
  end

  test "ignore_directories: names stay names, paths are expanded against root" do
    c = config(ignore_directories: ["node_modules", "vendor/assets", "/abs/dir", "node_modules"])
    assert_equal ["node_modules", "/app/vendor/assets", "/abs/dir"], c.ignore_directories
    assert_equal [], config(ignore_directories: []).ignore_directories
  end

  test "ignore_directories rejects non-arrays and non-strings" do
    assert_rejected(:ignore_directories, "node_modules", "Array")
    assert_rejected(:ignore_directories, [:node_modules], "Array")
    assert_rejected(:ignore_directories, [""], "Array")
  end

  test "roots: app root first, then gem homes, then Ruby's prefix" do
    roots = config.roots
    assert_equal "/app", roots.first
    assert_equal File.expand_path(RbConfig::CONFIG["prefix"]), roots.last
    Gem.path.each { |g| assert_includes roots, File.expand_path(g) }
  end

  test "equal settings compare equal" do
    assert_equal config(readonly: true), config(readonly: true)
    refute_equal config(readonly: true), config
    assert_equal config.hash, config.hash
  end
end

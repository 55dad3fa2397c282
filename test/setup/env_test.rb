# frozen_string_literal: true

require "test_helper"

module Loadout
  module Setup
    @manual = true # read the environment without setting this test process up
  end
end
require "loadout/setup"

class SetupEnvTest < Minitest::Test
  def config(env = {})
    Loadout::Setup.config_from({ "BUNDLE_GEMFILE" => "/app/Gemfile" }.merge(env))
  end

  def assert_env_rejected(name, value)
    error = assert_raises(Loadout::ConfigError) { config(name => value) }
    assert_equal name, error.name
    assert_includes error.message, name
    assert_includes error.message, value.inspect
    error
  end

  BOOLEANS = {
    "LOADOUT_READONLY" => ->(c) { c.readonly },
    "LOADOUT_LOG" => ->(c) { c.log },
    "LOADOUT_STATS" => ->(c) { c.stats },
    "LOADOUT_DISABLE_LOAD_PATH_CACHE" => ->(c) { !c.load_path_cache },
    "LOADOUT_DISABLE_COMPILE_CACHE" => ->(c) { !c.compile_cache? }
  }.freeze

  test "requiring loadout/setup with @manual does not set up" do
    assert_nil Loadout::Boot.config
  end

  test "defaults from an empty environment" do
    c = config
    assert_equal "/app", c.root
    assert_equal "/app/tmp/cache/loadout", c.cache_dir
    assert c.load_path_cache
    assert_equal %i[iseq yaml json], c.compile_cache
    assert c.development_mode
    refute c.readonly
    assert_nil c.trust
    assert_equal ["node_modules"], c.ignore_directories
    refute c.log
    refute c.stats
  end

  BOOLEANS.each do |name, reader|
    test "#{name} accepts 1/0/true/false/yes/no in any case" do
      %w[1 true yes TRUE Yes].each { |v| assert reader.call(config(name => v)), "#{name}=#{v}" }
      %w[0 false no FALSE No].each { |v| refute reader.call(config(name => v)), "#{name}=#{v}" }
      refute reader.call(config(name => "")), "#{name}= (empty) is the default"
    end

    test "#{name} rejects other values, naming the variable" do
      %w[on off 2 y enabled].each do |v|
        error = assert_env_rejected(name, v)
        assert_includes error.message, "1/0/true/false/yes/no"
      end
    end
  end

  test "LOADOUT_DISABLE turns everything off, strictly parsed" do
    assert_nil config("LOADOUT_DISABLE" => "1")
    assert_nil config("LOADOUT_DISABLE" => "yes")
    refute_nil config("LOADOUT_DISABLE" => "0")
    assert_env_rejected("LOADOUT_DISABLE", "please")
  end

  test "LOADOUT_DISABLE still validates LOADOUT_PURE" do
    assert_env_rejected("LOADOUT_PURE", "fast")
    assert_raises(Loadout::ConfigError) { config("LOADOUT_DISABLE" => "1", "LOADOUT_PURE" => "fast") }
  end

  test "LOADOUT_CACHE_DIR: relative to the app root, or absolute" do
    assert_equal "/app/cache", config("LOADOUT_CACHE_DIR" => "cache").cache_dir
    assert_equal "/var/cache/x", config("LOADOUT_CACHE_DIR" => "/var/cache/x").cache_dir
    assert_equal "/app/tmp/cache/loadout", config("LOADOUT_CACHE_DIR" => "").cache_dir
  end

  test "LOADOUT_TRUST: none, stable or all" do
    assert_nil config.trust
    assert_equal :stable, config("LOADOUT_TRUST" => "stable").trust
    assert_equal :stable, config("LOADOUT_TRUST" => "STABLE").trust
    assert_equal :none, config("LOADOUT_TRUST" => "none").trust
    assert_equal :all, config("LOADOUT_TRUST" => "all").trust
    error = assert_env_rejected("LOADOUT_TRUST", "1")
    assert_includes error.message, "none, stable or all"
  end

  test "LOADOUT_IGNORE_DIRECTORIES: a comma-separated list replacing the default" do
    assert_equal ["node_modules", "/app/vendor/big"],
                 config("LOADOUT_IGNORE_DIRECTORIES" => "node_modules, vendor/big").ignore_directories
    assert_equal ["tmp"], config("LOADOUT_IGNORE_DIRECTORIES" => "tmp").ignore_directories
    assert_equal [], config("LOADOUT_IGNORE_DIRECTORIES" => "").ignore_directories
  end

  test "development mode follows RAILS_ENV, then RACK_ENV, like Bootsnap" do
    assert config.development_mode
    assert config("RAILS_ENV" => "development").development_mode
    assert config("RAILS_ENV" => "").development_mode
    refute config("RAILS_ENV" => "production").development_mode
    refute config("RAILS_ENV" => "test").development_mode
    refute config("RACK_ENV" => "production").development_mode
    assert config("RACK_ENV" => "development").development_mode
    assert config("RAILS_ENV" => "development", "RACK_ENV" => "production").development_mode
    refute config("RAILS_ENV" => "staging", "RACK_ENV" => "development").development_mode
  end

  test "app root: BUNDLE_GEMFILE's directory" do
    assert_equal "/srv/app", config("BUNDLE_GEMFILE" => "/srv/app/Gemfile").root
    assert_equal "/srv/app", config("BUNDLE_GEMFILE" => "/srv/app/gems.rb").root
  end

  test "app root without a main script: the nearest Gemfile above the working directory, else the working directory" do
    with_files([["proj/Gemfile", ""], ["proj/a/b/"], ["other/"]]) do |dir|
      Dir.chdir(File.join(dir, "proj/a/b")) do
        assert_equal File.join(dir, "proj"), Loadout::AppRoot.find({}, "-e")
      end
      Dir.chdir(File.join(dir, "other")) do
        root = Loadout::AppRoot.find({}, "-e")
        # No Gemfile between here and /: the working directory (unless the machine has one above).
        assert(root == File.join(dir, "other") || File.file?(File.join(root, "Gemfile")))
      end
    end
  end
end

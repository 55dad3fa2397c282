# frozen_string_literal: true

require "test_helper"

require "loadout/env"

class SetupEnvTest < Minitest::Test
  def config(env = {})
    Loadout::Env.config_from({ "BUNDLE_GEMFILE" => "/app/Gemfile" }.merge(env))
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
    "LOADOUT_DISABLE_COMPILE_CACHE" => ->(c) { !c.compile_cache? },
    "LOADOUT_DISABLE_ISEQ_CACHE" => ->(c) { !c.compile_cache.include?(:iseq) },
    "LOADOUT_DISABLE_YAML_CACHE" => ->(c) { !c.compile_cache.include?(:yaml) },
    "LOADOUT_DISABLE_JSON_CACHE" => ->(c) { !c.compile_cache.include?(:json) },
    "LOADOUT_PURE" => ->(_c) { Loadout::Native.pure_requested?(ENV.to_h.merge(@env)) }
  }.freeze

  # Bytes that are not UTF-8 (a Latin-1 "é"), as the environment hands them over.
  NOT_UTF8 = "caf\xE9".dup.force_encoding(Encoding::UTF_8)

  test "requiring loadout/env reads nothing and sets nothing up" do
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
    test "#{name} accepts 1/0/true/false/yes/no in any case, blanks around ignored" do
      read = ->(v) { @env = { name => v }; instance_exec(config(@env), &reader) }
      ["1", "true", "yes", "TRUE", "Yes", " 1 ", "\tyes\n"].each { |v| assert read.(v), "#{name}=#{v.inspect}" }
      ["0", "false", "no", "FALSE", "No", " 0 "].each { |v| refute read.(v), "#{name}=#{v.inspect}" }
      refute read.(""), "#{name}= (empty) is the default"
      refute read.("  "), "#{name}= (blank) is the default"
    end

    test "#{name} refuses bytes that are not UTF-8 with a ConfigError" do
      error = assert_env_rejected(name, NOT_UTF8)
      assert_includes error.message, "1/0/true/false/yes/no"
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

  test "LOADOUT_DISABLE_{ISEQ,YAML,JSON}_CACHE turn one compile cache kind off each" do
    assert_equal %i[yaml json], config("LOADOUT_DISABLE_ISEQ_CACHE" => "1").compile_cache
    assert_equal %i[iseq json], config("LOADOUT_DISABLE_YAML_CACHE" => "1").compile_cache
    two_off = config("LOADOUT_DISABLE_YAML_CACHE" => "1", "LOADOUT_DISABLE_JSON_CACHE" => "yes")
    assert_equal %i[iseq], two_off.compile_cache
    all_off = config(Loadout::Env::KIND_SWITCHES.values.to_h { |name| [name, "1"] })
    refute all_off.compile_cache?
    assert all_off.load_path_cache
    assert_equal [], config("LOADOUT_DISABLE_COMPILE_CACHE" => "1", "LOADOUT_DISABLE_ISEQ_CACHE" => "0").compile_cache
    # A bad per-kind value is refused even when the whole compile cache is off.
    error = assert_raises(Loadout::ConfigError) do
      config("LOADOUT_DISABLE_COMPILE_CACHE" => "1", "LOADOUT_DISABLE_JSON_CACHE" => "x")
    end
    assert_equal "LOADOUT_DISABLE_JSON_CACHE", error.name
  end

  test "LOADOUT_CACHE_DIR: a ~user that does not exist is a ConfigError naming the variable" do
    error = assert_env_rejected("LOADOUT_CACHE_DIR", "~nosuchuser_loadout/x")
    assert_includes error.message, "a path that expands"
    assert_includes error.message, "nosuchuser_loadout"
    assert_equal File.join(Dir.home, "x"), config("LOADOUT_CACHE_DIR" => "~/x").cache_dir if ENV["HOME"]
  end

  test "non-UTF-8 bytes in LOADOUT_CACHE_DIR, LOADOUT_TRUST, LOADOUT_IGNORE_DIRECTORIES: ConfigError" do
    assert_includes assert_env_rejected("LOADOUT_CACHE_DIR", "/tmp/#{NOT_UTF8}").message, "valid UTF-8"
    assert_includes assert_env_rejected("LOADOUT_TRUST", NOT_UTF8).message, "none, stable or all"
    assert_includes assert_env_rejected("LOADOUT_IGNORE_DIRECTORIES", "a,#{NOT_UTF8}").message, "comma-separated"
  end

  test "every LOADOUT_* variable loadout reads is validated: a ConfigError, never another exception" do
    names = File.read(File.expand_path("../../lib/loadout/env.rb", __dir__)).scan(/"(LOADOUT_[A-Z_]+)"/).flatten.uniq
    assert_operator names.size, :>=, 12
    names.each do |name|
      [NOT_UTF8, "~nosuchuser_loadout/#{NOT_UTF8}"].each do |value|
        config(name => value)
      rescue Loadout::ConfigError => e
        assert_equal name, e.name
      end
    end
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

  test "in a real boot: LOADOUT_PURE=' 1 ' selects the Ruby twins; a bad value is one ConfigError" do
    with_files([["Gemfile", ""]]) do |dir|
      env = { "BUNDLE_GEMFILE" => File.join(dir, "Gemfile"), "LOADOUT_QUIET_BACKEND" => "1" }
      pure = run_ruby('require "loadout"; print Loadout::BACKEND', env: env.merge("LOADOUT_PURE" => " 1 "))
      assert_equal "ruby", pure.stdout, pure.stderr
      script = 'begin; require "loadout/setup"; rescue Loadout::ConfigError => e; print e.message; end'
      bad = run_ruby(script, env: env.merge("LOADOUT_CACHE_DIR" => "~nosuchuser_loadout/x"), chdir: dir)
      assert_match(/\ALOADOUT_CACHE_DIR: "~nosuchuser_loadout\/x" is not accepted; use a path that expands/, bad.stdout)
      latin1 = run_ruby(script, env: env.merge("LOADOUT_STATS" => "caf\xE9".b), chdir: dir)
      assert_includes latin1.stdout, "LOADOUT_STATS: "
      assert_includes latin1.stdout, "use 1/0/true/false/yes/no"
    end
  end
end

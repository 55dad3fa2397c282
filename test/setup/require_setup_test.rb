# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# `require "loadout/setup"` in a real child Ruby, the way an app's config/boot.rb does it.
class RequireSetupTest < Minitest::Test
  include Loadout::TestSupport::App

  SHOW = 'require "loadout/setup"; c = Loadout::Boot.config; ' \
         'puts c ? [c.root, c.cache_dir, c.development_mode, c.readonly].join("|") : "off"'

  def show(chdir:, env: {})
    result = spawn_ruby("-e", SHOW, env: env, chdir: chdir)
    assert result.success?, result.stderr
    assert_empty loadout_lines(result.stderr), result.stderr
    result.stdout.chomp
  end

  test "after bundler/setup the cache dir is tmp/cache/loadout next to the Gemfile, wherever the process starts" do
    with_app do |app|
      script = 'require "bundler/setup"; ' + SHOW
      result = spawn_ruby("-e", script, env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }, chdir: "/")
      assert result.success?, result.stderr
      assert_equal "#{app}|#{app}/tmp/cache/loadout|true|false", result.stdout.chomp
    end
  end

  test "without BUNDLE_GEMFILE the nearest Gemfile above the working directory wins" do
    with_app do |app|
      assert_equal "#{app}|#{app}/tmp/cache/loadout|true|false", show(chdir: File.join(app, "app/models"))
    end
  end

  test "LOADOUT_CACHE_DIR moves the cache, relative to the app root" do
    with_app do |app|
      line = show(chdir: app, env: { "LOADOUT_CACHE_DIR" => "var/lo" })
      assert_equal "#{app}/var/lo", line.split("|")[1]
    end
  end

  test "development mode comes from RAILS_ENV / RACK_ENV" do
    with_app do |app|
      assert_equal "true", show(chdir: app).split("|")[2]
      assert_equal "false", show(chdir: app, env: { "RAILS_ENV" => "production" }).split("|")[2]
      assert_equal "false", show(chdir: app, env: { "RACK_ENV" => "test" }).split("|")[2]
      assert_equal "true", show(chdir: app, env: { "RACK_ENV" => "development" }).split("|")[2]
    end
  end

  test "a warm boot serves loadout's own later files from the cache and loads no stats or value-storing code" do
    with_app do |app|
      script = 'at_exit { puts $LOADED_FEATURES.grep(%r{loadout/(stats|compile_cache/fidelity)\\.rb}).size }; ' \
               'require "loadout"; own = []; ' \
               "Loadout.instrumentation = lambda { |e, path, **| " \
               '  own << path if e == :hit && path.include?("/loadout/load_path") }; ' \
               'at_exit { puts "own hits: #{own.size}" }; ' \
               'require "loadout/setup"; require "yaml"; YAML.load_file(File.join(Dir.pwd, "config/locales/en.yml"))'
      env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
      sleep 2.1 # past the racy window of the files just copied, or the next boot revalidates (and writes)
      first = spawn_ruby("-e", script, env: env, chdir: app)
      assert first.success?, first.stderr
      # A first boot stores values (fidelity.rb) and records what it loaded without loading stats.rb.
      assert_equal "1", first.stdout.lines.last.chomp
      Loadout::Store.open(File.join(app, "tmp/cache/loadout/store"), readonly: true) do |store|
        assert store.key?(Loadout::LoadedFiles::KEY), "a first boot records what it loaded"
      end
      assert File.file?(File.join(app, "tmp/cache/loadout/store.last-boot"))
      warm = spawn_ruby("-e", script, env: env, chdir: app)
      assert warm.success?, warm.stderr
      assert_equal "0", warm.stdout.lines.last.chomp
      # The compile cache is installed before the load path index, whose files it then serves.
      assert_operator warm.stdout[/own hits: (\d+)/, 1].to_i, :>=, 5, warm.stdout
    end
  end

  test "LOADOUT_DISABLE=1 leaves the process alone" do
    with_app do |app|
      assert_equal "off", show(chdir: app, env: { "LOADOUT_DISABLE" => "1" })
      refute File.exist?(File.join(app, "tmp/cache/loadout"))
    end
  end

  test "a file shadowing one of loadout's on $LOAD_PATH changes nothing: loadout loads its own by absolute path" do
    with_app do |app|
      files = [["loadout/compile_cache.rb", "module Loadout\n  def broken(\nend\n"],
               ["loadout/scan.rb", "raise 'shadow'"]]
      with_files(files) do |shadow|
        script = "$LOAD_PATH.unshift(#{shadow.dump}); " \
                 'require "loadout/setup"; require "yaml"; ' \
                 'p YAML.load_file(File.join(Dir.pwd, "config/locales/en.yml")).keys; ' \
                 "p Loadout::Boot.installed.map(&:name)"
        env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
        result = spawn_ruby("-e", script, env: env, chdir: app)
        assert result.success?, result.stderr
        assert_equal ['["en"]', '["Loadout::CompileCache", "Loadout::LoadPath"]'], result.stdout.lines.map(&:chomp)
        assert_equal [], loadout_lines(result.stderr)
      end
    end
  end

  test "a component file this Ruby cannot parse costs one warning, and the app boots without it" do
    with_app do |app|
      with_files([]) do |copy|
        FileUtils.cp_r(File.join(Loadout::TestSupport::Subprocess::LIB, "."), copy)
        File.write(File.join(copy, "loadout/compile_cache.rb"), "module Loadout\n  def broken(\nend\n")
        # A copy of lib/ with a broken compile_cache.rb, used without the app's bundle (whose path
        # gem would be the real lib/).
        script = "require #{File.join(copy, "loadout").dump}; " \
                 'Loadout.setup(cache_dir: "tmp/cache/loadout", root: Dir.pwd); require "yaml"; ' \
                 'p YAML.load_file(File.join(Dir.pwd, "config/locales/en.yml")).keys; p Loadout::Boot.installed.map(&:name)'
        result = spawn_ruby("-e", script, env: { "BUNDLE_GEMFILE" => nil, "RUBYOPT" => nil }, chdir: app)
        assert result.success?, result.stderr
        assert_equal ['["en"]', '["Loadout::LoadPath"]'], result.stdout.lines.map(&:chomp)
        lines = loadout_lines(result.stderr)
        assert_equal 1, lines.size, result.stderr
        assert_match(/CompileCache failed to load \(SyntaxError: .*\); running without it/, lines.first)
      end
    end
  end

  test "a bad variable stops the boot with a message naming it" do
    with_app do |app|
      result = spawn_ruby("-e", SHOW, env: { "LOADOUT_READONLY" => "maybe" }, chdir: app)
      refute result.success?
      assert_includes result.stderr, 'LOADOUT_READONLY: "maybe" is not accepted; use 1/0/true/false/yes/no'
      assert_includes result.stderr, "Loadout::ConfigError"
    end
  end

  test "a second setup with the same options is a silent no-op; different options warn and keep the first" do
    with_app do |app|
      script = <<~RUBY
        require "loadout"
        p Loadout.setup(cache_dir: "c1")
        p Loadout.setup(cache_dir: "c1")
        p Loadout.setup(cache_dir: "c2", readonly: true)
        puts Loadout::Boot.config.cache_dir
      RUBY
      result = spawn_ruby("-e", script, chdir: app)
      assert result.success?, result.stderr
      assert_equal "true\nfalse\nfalse\n#{app}/c1\n", result.stdout
      lines = loadout_lines(result.stderr)
      assert_equal 1, lines.size, result.stderr
      assert_includes lines.first, "already called with different options"
      assert_includes lines.first, "cache_dir"
      assert_includes lines.first, "readonly"
    end
  end

  # An image built without `loadout precompile` and run read-only: nothing to serve, so the boot
  # is plain Ruby's without loading loadout's setup (bench: 1.05x plain before, 1.01x after).
  test "read-only with no store: setup returns false, loads none of loadout's setup, says nothing" do
    with_app do |app|
      script = <<~'RUBY'
        require "loadout"
        print Loadout.setup(cache_dir: "c", readonly: true), " ", Loadout.autoload?(:Boot) ? "-" : "boot"
      RUBY
      result = spawn_ruby("-e", script, chdir: app)
      assert result.success?, result.stderr
      assert_equal "false -", result.stdout
      assert_empty loadout_lines(result.stderr), result.stderr
      refute File.exist?(File.join(app, "c")), "nothing written"

      # Someone watching (LOADOUT_STATS, LOADOUT_LOG) gets the boot set up and told why it serves nothing.
      watched = spawn_ruby("-e", script.sub("readonly: true", "readonly: true, stats: true"), chdir: app)
      assert watched.success?, watched.stderr
      assert_equal "true boot", watched.stdout
      # A store that is there is read.
      FileUtils.mkdir_p(File.join(app, "c"))
      Loadout::Store.open(File.join(app, "c/store")) { |store| store.put("k", "v") }
      stored = spawn_ruby("-e", script, chdir: app)
      assert stored.success?, stored.stderr
      assert_equal "true boot", stored.stdout
    end
  end

  test "a bad option to Loadout.setup raises even after a good setup" do
    with_app do |app|
      script = 'require "loadout"; Loadout.setup(cache_dir: "c"); ' \
               'begin; Loadout.setup(cache_dir: "c", jit: true); rescue Loadout::ConfigError => e; puts e.message; end'
      result = spawn_ruby("-e", script, chdir: app)
      assert result.success?, result.stderr
      assert_match(/\Ajit: true is not accepted/, result.stdout)
    end
  end
end

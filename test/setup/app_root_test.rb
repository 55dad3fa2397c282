# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# Without root:, the app root comes from BUNDLE_GEMFILE or the main script's project, never only
# from the working directory: the same app booted from another directory (cron, systemd,
# `ruby /app/bin/job`) keeps its cache; a deleted working directory never raises.
class AppRootTest < Minitest::Test
  # What the apps' config/settings.yml loads as ("a: 1\nb: [x, y]\n").
  SETTINGS = { "a" => 1, "b" => %w[x y] }.freeze
  include Loadout::TestSupport::App

  # bin/job: Loadout.setup without root:, then app files and a YAML file; prints the root and
  # every cache event under the app (relative paths).
  JOB = <<~'RUBY'
    APP = File.expand_path("..", __dir__)
    require "loadout"
    events = []
    Loadout.instrumentation = lambda do |event, path, **info|
      next unless path.to_s.start_with?("#{APP}/") && info[:cache] != :load_path

      events << [info[:cache], event, path.to_s.delete_prefix("#{APP}/"), info[:reason]].compact.join(" ")
    end
    if ENV["JOB_SETUP"] == "require"
      require "loadout/setup"
    else
      Loadout.setup(cache_dir: File.join(APP, "tmp/cache/loadout"))
    end
    $LOAD_PATH.unshift(File.join(APP, "lib"))
    require "job_lib/a"
    require "job_lib/b"
    require "yaml"
    puts "settings=#{YAML.load_file(File.join(APP, "config/settings.yml")).inspect}"
    puts "root=#{Loadout::Boot.config&.root}"
    puts events.sort
  RUBY

  def with_job_app
    with_files([["app/Gemfile", ""], ["app/bin/job", JOB], ["app/lib/job_lib/a.rb", "module JobA; end\n"],
                ["app/lib/job_lib/b.rb", "module JobB; end\n"], ["app/config/settings.yml", "a: 1\nb: [x, y]\n"],
                ["elsewhere/"]]) do |dir|
      yield File.join(dir, "app"), File.join(dir, "elsewhere")
    end
  end

  def job(app, chdir, env = {})
    result = spawn_ruby(File.join(app, "bin/job"), chdir: chdir, env: env)
    assert result.success?, result.stderr
    assert_empty loadout_lines(result.stderr), result.stderr
    result.stdout
  end

  %w[setup require].each do |how|
    test "the same app booted from another working directory hits its cache (Loadout.#{how} without root:)" do
      with_job_app do |app, elsewhere|
        env = { "JOB_SETUP" => how }
        job(app, app, env) # cold
        job(app, app, env) # warm: records the revalidation stats, if any
        out = job(app, elsewhere, env)
        assert_includes out, "root=#{app}\n"
        assert_includes out, "settings=#{SETTINGS.inspect}\n" # (Hash#inspect spells it per Ruby: 3.4 adds spaces)
        # Served from the cache (hit, or revalidated: files this young are inside the racy window).
        served = /\A(iseq|yaml) (hit|revalidated) /
        events = out.lines.map(&:chomp).grep(/\A(iseq|yaml) /)
        assert_equal ["iseq lib/job_lib/a.rb", "iseq lib/job_lib/b.rb", "yaml config/settings.yml"],
                     events.map { |e| e.sub(/ \w+ /, " ") }
        assert(events.all? { |e| e.match?(served) }, events.inspect)
        from_root = job(app, "/", env).lines.grep(/lib\/job_lib/)
        assert_equal 2, from_root.size
        assert(from_root.all? { |e| e.match?(served) }, from_root.inspect)
      end
    end
  end

  # Runs +code+ with `ruby -e` in a working directory that is deleted before Ruby starts.
  def in_deleted_cwd(code, env: {})
    with_files([["gone/"]]) do |dir|
      gone = File.join(dir, "gone")
      script = 'cd "$0" && rmdir "$0" && exec "$@"'
      result = spawn_ruby_cmd(["sh", "-c", script, gone, RbConfig.ruby, "-I", LIB, "-e", code], env)
      yield result, dir
    end
  end

  def spawn_ruby_cmd(cmd, env)
    out, err, status = Open3.capture3(clean_env(env), *cmd, pgroup: true)
    wait_for_group(status.pid)
    Loadout::TestSupport::Subprocess::Result.new(out, err, status)
  end

  test "a deleted working directory: setup without root never raises; one warning, then plain Ruby" do
    [
      'require "loadout/setup"',
      'require "loadout"; Loadout.setup(cache_dir: "tmp/cache/loadout")',
      'require "loadout"; Loadout.setup(cache_dir: "/nonexistent-loadout-test/cache")',
    ].each do |setup|
      in_deleted_cwd("#{setup}; require \"set\"; puts Set.new([1]).size; puts Loadout::Boot.config.inspect") do |r, _|
        assert r.success?, "#{setup}: #{r.stderr}"
        assert_equal "1\nnil\n", r.stdout, setup
        lines = loadout_lines(r.stderr)
        assert_equal 1, lines.size, "#{setup}: #{r.stderr}"
        assert_includes lines.first, "loadout: the app root cannot be found (the working directory was deleted); " \
                                     "pass root:; running without loadout"
      end
    end
  end

  test "a deleted working directory with BUNDLE_GEMFILE, or an absolute root:, still sets up" do
    with_files([["app/Gemfile", ""]]) do |dir|
      app = File.join(dir, "app")
      code = 'require "loadout/setup"; puts Loadout::Boot.config.root'
      in_deleted_cwd(code, env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }) do |r, _|
        assert r.success?, r.stderr
        assert_equal "#{app}\n", r.stdout
        assert_empty loadout_lines(r.stderr), r.stderr
      end
      code = "require 'loadout'; Loadout.setup(cache_dir: 'c', root: #{app.dump}); puts Loadout::Boot.config.cache_dir"
      in_deleted_cwd(code) do |r, _|
        assert r.success?, r.stderr
        assert_equal "#{app}/c\n", r.stdout
      end
    end
  end

  # MessagePack-coded entries met by a process that cannot load msgpack (booted without the
  # bundle, as a cron job often is): the extension reads them itself (Native.msgpack_load); on the
  # pure backend they are sound entries this process cannot decode, not damage.
  test "an entry whose codec gem this process cannot load is served natively, a miss (codec_unavailable) " \
       "on the pure backend, never corrupt" do
    spec = Gem.loaded_specs["msgpack"] or skip "msgpack is not in the bundle"
    with_job_app do |app, _|
      yaml = File.join(app, "config/settings.yml")
      code = <<~RUBY
        $LOAD_PATH.unshift(*#{spec.full_require_paths.inspect})
        require "loadout"
        Loadout.instrumentation = ->(e, path, **i) { puts [e, i[:reason]].compact.join(" ") if i[:cache] == :yaml }
        Loadout.setup(cache_dir: #{File.join(app, "tmp/c").dump}, root: #{app.dump}, load_path_cache: false)
        Loadout::CompileCache::Serializer.instance_variable_set(:@msgpack, false) if ENV["NO_MSGPACK"]
        require "yaml"
        p YAML.load_file(#{yaml.dump})
      RUBY
      first = spawn_ruby("-e", code, chdir: app)
      assert first.success?, first.stderr
      assert_equal "miss\n#{SETTINGS.inspect}\n", first.stdout
      without = spawn_ruby("-e", code, chdir: app, env: { "NO_MSGPACK" => "1" })
      assert without.success?, without.stderr
      if Loadout::BACKEND == :native
        assert_match(/\A(hit|revalidated)\n#{Regexp.escape(SETTINGS.inspect)}\n\z/, without.stdout)
      else
        assert_equal "miss codec_unavailable\n#{SETTINGS.inspect}\n", without.stdout
      end
      next unless Loadout::BACKEND == :native

      # With the gem at hand, a hit on the native backend still loads none of it into the app. (On
      # the pure backend the miss above stored the value again, with Marshal.)
      loaded = spawn_ruby("-e", "#{code}\nputs $LOADED_FEATURES.grep(%r{/msgpack[./]}).size", chdir: app)
      assert loaded.success?, loaded.stderr
      assert_equal "hit\n#{SETTINGS.inspect}\n0\n", loaded.stdout.sub(/\Arevalidated\n/, "hit\n")
    end
  end
end

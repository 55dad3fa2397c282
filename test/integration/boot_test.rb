# frozen_string_literal: true

require "test_helper"
require_relative "app_helper"

# Boots test/fixtures/app (vendored gem dirs on $LOAD_PATH, require_relative, an optional require
# rescued, autoloads, YAML and JSON read at boot, a Rails-style app/ eager load) in child Rubies
# and compares every boot with loadout to the boot without it.
class BootTest < Minitest::Test
  include Loadout::TestSupport::App

  test "cold and warm boots print exactly what a boot without loadout prints" do
    with_app do |app|
      plain = plain_output(app)
      cold = boot_app!(app)
      assert_equal "loadout=on\n", cold.stdout[/^loadout=.*\n/]
      assert_equal plain, without_marker(cold.stdout)
      assert_empty loadout_lines(cold.stderr), cold.stderr
      warm = boot_app!(app)
      assert_equal plain, without_marker(warm.stdout)
      assert_empty loadout_lines(warm.stderr), warm.stderr
    end
  end

  test "once warm, a boot that hits writes nothing to the cache dir" do
    with_app do |app|
      # The copy just made gave every file a fresh ctime; an entry verified within the racy window
      # after a ctime is re-confirmed by digest (and that confirmation is written). Wait the window
      # out so the first warm boot is already a pure stat hit, as it is for files not just copied.
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      3.times { boot_app!(app) }
      # Every boot leaves its numbers in store.last-boot (for `loadout stats`); nothing else.
      last_boot = File.join(app, "tmp/cache/loadout/store.last-boot")
      snapshot = lambda do
        (Dir[File.join(app, "tmp/cache/loadout/*")] - [last_boot]).sort.to_h { |f| [f, File.binread(f)] }
      end
      before = snapshot.call
      refute_empty before
      numbers = File.binread(last_boot)
      boot_app!(app)
      assert_equal before.keys, snapshot.call.keys
      assert(before == snapshot.call, "a warm boot changed the store or its hint file")
      refute_equal numbers, File.binread(last_boot), "the warm boot left its numbers"
    end
  end

  test "after `loadout precompile` the first boot hits the compile caches for every app file" do
    with_app do |app|
      plain = plain_output(app)
      pre = spawn_ruby(File.expand_path("../../exe/loadout", __dir__), "precompile", chdir: app)
      assert pre.success?, pre.stdout + pre.stderr
      assert_match(/precompile: \d+ files \(iseq \d+, yaml 2, json 1\) .* 0 failed/, pre.stdout)
      result = boot_app!(app, env: { "LOADOUT_LOG" => "1" })
      assert_equal plain, without_marker(result.stdout)
      events = loadout_lines(result.stderr)
      app_misses = events.grep(/ (iseq|yaml|json) (miss|stale) #{Regexp.escape(app)}\//)
      assert_empty app_misses, result.stderr
      # "revalidated" is served from the cache too (a file written within the same clock tick
      # as its entry is confirmed by digest once: racy-clean handling).
      assert_operator events.grep(/ iseq (hit|revalidated) #{Regexp.escape(app)}\/app\//).size, :>=, 4, result.stderr
      assert_equal 2, events.grep(%r{ yaml (hit|revalidated) #{Regexp.escape(app)}/config/locales/}).size,
                   result.stderr
    end
  end

  test "the pure-Ruby backend boots the same app the same way, from the same cache" do
    with_app do |app|
      plain = plain_output(app)
      boot_app!(app, env: { "LOADOUT_PURE" => "0" })
      assert_equal plain, without_marker(boot_app!(app, env: { "LOADOUT_PURE" => "1" }).stdout)
      assert_equal plain, without_marker(boot_app!(app, env: { "LOADOUT_PURE" => "0" }).stdout)
    end
  end

  test "LOADOUT_DISABLE=1 and LOADOUT_READONLY=1 boot the same app" do
    with_app do |app|
      plain = plain_output(app)
      assert_equal plain, without_marker(boot_app!(app, env: { "LOADOUT_DISABLE" => "1" }).stdout)
      readonly = boot_app!(app, env: { "LOADOUT_READONLY" => "1" })
      assert_equal plain, without_marker(readonly.stdout)
      assert_empty loadout_lines(readonly.stderr)
      refute File.exist?(File.join(app, "tmp/cache/loadout/store")), "readonly boots never write"
    end
  end

  test "every LOADOUT_TRUST level is accepted by every component and boots the same app" do
    with_app do |app|
      plain = plain_output(app)
      %w[none stable all].each do |level|
        2.times do
          result = boot_app!(app, env: { "LOADOUT_TRUST" => level })
          assert_equal plain, without_marker(result.stdout), level
          assert_empty loadout_lines(result.stderr), "LOADOUT_TRUST=#{level}: #{result.stderr}"
        end
      end
    end
  end

  test "an unwritable cache dir: the app boots, with exactly one warning naming the dir and the fix" do
    with_app do |app|
      plain = plain_output(app)
      cache = File.join(app, "tmp/cache/loadout")
      FileUtils.mkdir_p(cache)
      FileUtils.chmod(0o000, cache)
      result = boot_app!(app, unprivileged: true)
      assert_equal plain, without_marker(result.stdout)
      lines = loadout_lines(result.stderr)
      assert_equal 1, lines.size, result.stderr
      assert_includes lines.first, cache
      assert_includes lines.first, "LOADOUT_CACHE_DIR"
    ensure
      FileUtils.chmod(0o755, cache) if cache && File.exist?(cache)
    end
  end

  test "an app dir the process may not create the cache in: one warning, plain boot" do
    with_app do |app|
      plain = plain_output(app)
      FileUtils.mkdir_p(File.join(app, "tmp"))
      FileUtils.chmod(0o555, File.join(app, "tmp"))
      result = boot_app!(app, unprivileged: true)
      assert_equal plain, without_marker(result.stdout)
      assert_equal 1, loadout_lines(result.stderr).size, result.stderr
    end
  end

  test "a read-only filesystem with a cache on it: one warning, the cache is used read-only" do
    skip "needs root and unshare for a read-only bind mount" unless can_mount_read_only?
    with_app do |app|
      plain = plain_output(app)
      boot_app!(app)
      store = File.join(app, "tmp/cache/loadout/store")
      before = File.binread(store)
      result = boot_app!(app, read_only: File.join(app, "tmp"))
      assert_equal plain, without_marker(result.stdout)
      lines = loadout_lines(result.stderr)
      assert_equal 1, lines.size, result.stderr
      assert_includes lines.first, "#{app}/tmp/cache/loadout is not writable"
      assert_includes lines.first, "using the cache read-only"
      assert_equal before, File.binread(store)
    end
  end

  test "a read-only filesystem without a cache: one warning, plain boot" do
    skip "needs root and unshare for a read-only bind mount" unless can_mount_read_only?
    with_app do |app|
      plain = plain_output(app)
      FileUtils.mkdir_p(File.join(app, "tmp"))
      result = boot_app!(app, read_only: File.join(app, "tmp"))
      assert_equal plain, without_marker(result.stdout)
      lines = loadout_lines(result.stderr)
      assert_equal 1, lines.size, result.stderr
      assert_includes lines.first, "running without the cache"
    end
  end

  test "a file where the cache dir should be: the app boots, with exactly one warning" do
    with_app do |app|
      plain = plain_output(app)
      cache = File.join(app, "tmp/cache/loadout")
      FileUtils.mkdir_p(File.dirname(cache))
      File.write(cache, "not a directory")
      result = boot_app!(app)
      assert_equal plain, without_marker(result.stdout)
      lines = loadout_lines(result.stderr)
      assert_equal 1, lines.size, result.stderr
      assert_includes lines.first, cache
      assert_includes lines.first, "a file is in the way"
      assert_equal "not a directory", File.read(cache), "loadout must not touch what is in the way"
    end
  end

  test "LOADOUT_STATS=1 prints the report at exit and changes nothing else" do
    with_app do |app|
      plain = plain_output(app)
      result = boot_app!(app, env: { "LOADOUT_STATS" => "1" })
      assert_equal plain, without_marker(result.stdout)
      report = result.stderr
      assert_match(/^loadout stats \(pid \d+, boot, backend (native|ruby)\)$/, report)
      assert_match(/^  setup: +\d+\.\d+ ms$/, report)
      calls = report[/requires: +(\d+) calls/, 1].to_i
      assert_operator calls, :>=, 16, report # the fixture requires at least 16 files of its own
      assert_includes report, "slowest requires (self time, nested requires excluded):"
      top = report.lines.grep(/^ +\d+\.\d+ ms  /)
      assert_equal 10, top.size, report
      assert_match(/requires: +\d+ calls, \d+ loaded, [1-9]\d* raised/, report, "the optional require rescued by beta")
    end
  end

  test "LOADOUT_LOG=1 prints events to stderr and changes nothing else" do
    with_app do |app|
      plain = plain_output(app)
      result = boot_app!(app, env: { "LOADOUT_LOG" => "1" })
      assert_equal plain, without_marker(result.stdout)
      lines = loadout_lines(result.stderr)
      refute_empty lines, "a cold boot has misses to report"
      lines.each { |l| assert_match(/\Aloadout: \S+ \S+ /, l) }
    end
  end

  test "each boot leaves its numbers beside the store for `loadout stats`" do
    require "stringio"
    require "loadout/cli"
    with_app do |app|
      boot_app!(app)
      boot_app!(app)
      out = StringIO.new
      env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
      status = Loadout::CLI.new(["stats"], out: out, err: out, env: env).run
      assert_equal 0, status, out.string
      assert_match(/^last boot:  .* pid \d+ `.*` \((native|ruby), Ruby [\d.]+\), setup [\d.]+ ms; wrote /, out.string)
      # st/loaded (what the boot loaded, for check), st/value_calls (its YAML/JSON calls) and
      # st/seen/<variant> for the iseq, yaml and json variants (see Eviction); the numbers
      # themselves are in store.last-boot, not in the store.
      assert_match(/^  stats +5$/, out.string)
      assert_match(/hit rate \d+\.\d%/, out.string)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "loadout/store"
require "loadout/compile_cache/entry_checker"

# CompileCache.check (what `loadout check` asks per file) against a store filled by a real
# `loadout precompile` in a child process.
class EntryCheckerTest < Minitest::Test
  EXE = File.expand_path("../../exe/loadout", __dir__)

  def with_precompiled_app
    files = [["app/a.rb", "A = 1\n"], ["app/b.rb", "B = 2\n"], ["app/broken.rb", "def x(\n"],
             ["config/en.yml", "en:\n  hi: there\n"], ["config/s.json", "{\"a\": 1}\n"]]
    with_files(files) do |dir|
      cache = File.join(dir, "tmp/cache")
      # Past the racy window, so the precompiled entries are trusted by stat alone.
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      # Without the bundle's environment: the app root is then this directory (not the repo's
      # Gemfile's), and keys are relative to it, as the roots passed to check below say.
      result = run_ruby("load ARGV.shift", args: [EXE, "precompile", "-j", "0", "--cache-dir", cache, dir], chdir: dir,
                                           env: { "BUNDLE_GEMFILE" => nil, "RUBYOPT" => nil })
      assert result.success?, result.stdout + result.stderr
      yield dir, File.join(cache, "store")
    end
  end

  def check(store_path, path, kind, dir)
    Loadout::Store.open(store_path, readonly: true) do |store|
      Loadout::CompileCache.check(store: store, path: path, kind: kind, roots: [dir])
    end
  end

  test "precompiled files hit, and each kind of change gets its own answer" do
    with_precompiled_app do |dir, store|
      a = File.join(dir, "app/a.rb")
      assert_equal [:hit, nil], check(store, a, :iseq, dir)
      assert_equal :hit, check(store, File.join(dir, "config/en.yml"), :yaml, dir)[0]
      assert_equal :hit, check(store, File.join(dir, "config/s.json"), :json, dir)[0]
      status, reason = check(store, File.join(dir, "app/broken.rb"), :iseq, dir)
      assert_equal :hit, status
      assert_match(/Ruby compiles it itself \(syntax_error\)/, reason)

      # same size, mtime put back: must be stale, not a stat hit
      old = File.stat(a).mtime
      File.write(a, "A = 9\n")
      File.utime(old, old, a)
      assert_equal [:stale, "content changed since it was cached"], check(store, a, :iseq, dir)

      # only the mtime moved (a fresh git clone): served after one digest
      b = File.join(dir, "app/b.rb")
      File.utime(Time.now + 60, Time.now + 60, b)
      status, reason = check(store, b, :iseq, dir)
      assert_equal :hit, status
      assert_match(/content the same/, reason)

      File.write(File.join(dir, "app/new.rb"), "N = 1\n")
      assert_equal [:missing, "no entry"], check(store, File.join(dir, "app/new.rb"), :iseq, dir)
      assert_equal [:missing, "no entry"], check(store, File.join(dir, "app/a.rb"), :yaml, dir)
    end
  end

  test "checking writes nothing to the store" do
    with_precompiled_app do |dir, store|
      b = File.join(dir, "app/b.rb")
      File.utime(Time.now + 60, Time.now + 60, b)
      before = File.binread(store)
      assert_equal :hit, check(store, b, :iseq, dir)[0]
      assert_equal before, File.binread(store)
    end
  end

  test "a YAML or JSON entry counts only under a call shape the app's boots use (recorded, or a common one)" do
    require "yaml"
    require "json"
    with_files([["c/x.yml", "a: 1\n"], ["c/x.json", "{\"a\": 1}"]]) do |dir|
      path = File.join(dir, "store")
      yml = File.join(dir, "c/x.yml")
      json = File.join(dir, "c/x.json")
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      # (Deprecation warnings off, as by default: under the suite's -w, json 2.13+ parses
      # every call itself, see json_test.)
      deprecated = Warning[:deprecated]
      Warning[:deprecated] = false
      Loadout::Store.open(path) do |store|
        Loadout::CompileCache.install!(store: store, iseq: false, roots: [dir])
        YAML.safe_load_file(yml, symbolize_names: true) # a shape no default covers
        JSON.load_file(json, { symbolize_names: true })
        store.flush
      ensure
        Loadout::CompileCache.uninstall!
        Warning[:deprecated] = deprecated
      end
      # Entries exist, but not under a variant a boot is known to read.
      assert_equal [:missing, "no entry"], check(path, yml, :yaml, dir)
      assert_equal [:missing, "no entry"], check(path, json, :json, dir)
      # The boot's record names the shapes: now they are the ones checked.
      Loadout::Store.open(path) { |store| Loadout::CompileCache.__record_boot(store) }
      Loadout::CompileCache.instance_variable_set(:@checker, nil)
      assert_equal [:hit, nil], check(path, yml, :yaml, dir)
      assert_equal [:hit, nil], check(path, json, :json, dir)
    end
  end

  test "an unknown kind is a ConfigError naming the accepted kinds" do
    error = assert_raises(Loadout::ConfigError) do
      Loadout::CompileCache.check(store: Object.new, path: "/x.rb", kind: :toml, roots: ["/"])
    end
    assert_match(/:iseq, :yaml, :json/, error.message)
  end
end

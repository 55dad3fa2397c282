# frozen_string_literal: true

require "test_helper"
require_relative "app_boot"
require "support/check_output"
require "support/fake_store"
require "stringio"
require "loadout/cli"

# LoadPath.check and `loadout check`: what the next boot will do with the stored index, said
# without booting the app, for the app's $LOAD_PATH (recorded by its last boot, or asked from a
# child `ruby -rbundler/setup`), never for the CLI's own.
class LoadPathCheckTest < Minitest::Test
  include Loadout::TestSupport::AppBoot
  include Loadout::TestSupport::CheckOutput

  test "after a warm boot check says hit, for the $LOAD_PATH the boot recorded" do
    with_booted_app do |app, lib|
      2.times { boot!(app, lib) }
      out = check(app, lib, status: 0)
      assert_includes out, "load_path:  hit (every directory of this $LOAD_PATH"
      assert_includes out, "3 added after boot" # vendor/gems/{alpha,beta}/lib and lib, unshifted by the app
      assert_includes out, "$LOAD_PATH: as the last boot that wrote the cache saw it"
      assert_includes out, "verdict:    HIT"
      # And it is right: the next boot restores the index and lists nothing.
      stats = load_path_stats(boot!(app, lib, env: { "LOADOUT_STATS" => "1" }).stderr)
      assert_equal "true", stats["restored"]
      assert_equal "0", stats["rescans"]
    end
  end

  test "the boot record is written by a boot that writes anyway; a warm boot writes nothing" do
    with_booted_app do |app, lib|
      boot!(app, lib)
      files = lambda do
        Dir[File.join(app, "tmp/cache/loadout/*")].grep_v(/\.last-boot\z/).sort.to_h { |f| [f, File.binread(f)] }
      end
      before = files.call
      Loadout::Store.open(store_path(app), readonly: true) do |s|
        record = Loadout::LoadPath::BootRecord.load(s)
        assert_includes record[:load_path], lib
        assert_equal ["#{app}/vendor/gems/alpha/lib", "#{app}/vendor/gems/beta/lib", "#{app}/lib"].sort,
                     record[:later].sort
        assert_equal "#{app}/Gemfile.lock", record[:lock][0]
      end
      2.times { boot!(app, lib) }
      assert(before == files.call, "a warm boot changed the store or its hint file")
    end
  end

  test "a file added to an app dir: stale, naming the dir whose mtime changed; the next boot relists it" do
    with_booted_app do |app, lib|
      2.times { boot!(app, lib) }
      File.write(File.join(app, "lib/fixture_app/added.rb"), "ADDED = 1\n")
      out = check(app, lib, status: 2)
      assert_includes out, "load_path:  stale (1 directory is listed again"
      assert_includes out, "  stale: #{app}/lib (added after boot; #{app}/lib/fixture_app mtime changed)"
      assert_includes out, "verdict:    MISS"
      stats = load_path_stats(boot!(app, lib, env: { "LOADOUT_STATS" => "1" }).stderr)
      assert_equal "1", stats["rescans"], "only the changed entry is listed again"
      assert_operator stats["restored_entries"].to_i, :>=, 9, stats.inspect
      backdate(File.dirname(app)) # the relisting is then not racily clean
      boot!(app, lib)
      assert_includes check(app, lib, status: 0), "load_path:  hit"
    end
  end

  test "a changed item of the boot-time $LOAD_PATH is named too" do
    with_booted_app do |app, lib|
      2.times { boot!(app, lib) }
      File.write(File.join(lib, "loadout/zz_added.rb"), "")
      out = check(app, lib, status: 2)
      assert_includes out, "  stale: #{lib} (#{lib}/loadout mtime changed)"
    end
  end

  # The app's boot.rb (main script) and config/boot.rb (still loading when loadout/setup runs)
  # and Bundler's files are loaded before setup: no boot caches them, none needs them cached.
  test "files loaded before setup are reported on their own line, not as misses" do
    with_booted_app do |app, lib|
      cc_on = { "LOADOUT_DISABLE_COMPILE_CACHE" => nil }
      2.times { boot!(app, lib, env: cc_on) }
      Loadout::Store.open(store_path(app), readonly: true) do |s|
        before = Loadout::LoadPath::BootRecord.load(s)[:before]
        assert_equal ["#{app}/boot.rb", "#{app}/config/boot.rb"], before.first(2),
                     "the call stack at install, main script first"
        assert(before.any? { |f| f.end_with?("/bundler/setup.rb") }, "what Bundler loaded: #{before.inspect}")
      end
      result = ruby_in(app, lib, EXE, "check", "--no-yaml", "--no-json", env: cc_on)
      out = result.stdout
      refute_includes out, "missing: #{app}/config/boot.rb"
      refute_includes out, "missing: #{app}/boot.rb"
      assert_loaded_before_setup(out, "#{app}/boot.rb", "#{app}/config/boot.rb")
      assert_match(/^iseq: +\d+ files: \d+ hit$/, out)
      assert_includes out, "verdict:    HIT"
      assert_equal 0, result.status.exitstatus, out + result.stderr
      # And it is right: the next boot compiles nothing.
      stats = boot!(app, lib, env: cc_on.merge("LOADOUT_STATS" => "1")).stderr
      assert_match(/^  iseq: +hits=[1-9]\d* misses=0 /, stats)
    end
  end

  test "an empty cache is a miss; the $LOAD_PATH comes from bundler/setup when no boot was recorded" do
    with_booted_app do |app, lib|
      FileUtils.mkdir_p(File.dirname(store_path(app)))
      Loadout::Store.open(store_path(app)) { |s| s.put("st/other", "1") }
      out = check(app, lib, status: 2)
      assert_includes out, "no usable stored listing and will be listed"
      assert_includes out, "$LOAD_PATH: `ruby -rbundler/setup` with BUNDLE_GEMFILE=#{app}/Gemfile"
      assert_includes out, "no boot recorded yet"
      Loadout::Store.open(store_path(app), readonly: true) do |s|
        before = Loadout::LoadPath::AppLoadPath.for_check(s, app).before
        assert(before.any? { |f| f.end_with?("/bundler/setup.rb") },
               "the probe tells what Bundler loads before setup: #{before.inspect}")
      end
      # The probe's $LOAD_PATH is the app's: once a boot stored its index, the probe finds it.
      boot!(app, lib)
      Loadout::Store.open(store_path(app)) { |s| s.delete("lp/boot") }
      assert_includes check(app, lib, status: 0), "load_path:  hit"
    end
  end

  test "a record made with another Gemfile.lock is not trusted: check answers for the probe's $LOAD_PATH" do
    with_booted_app do |app, lib|
      boot!(app, lib, ruby_opts: ["-I", File.join(app, "config")]) # an item the probe cannot see
      File.write(File.join(app, "Gemfile.lock"), File.read(File.join(app, "Gemfile.lock")) + "\n")
      out = check(app, lib, status: 0)
      assert_includes out, "the recorded one is not used: Gemfile.lock changed since it was recorded"
      # The same directories as before: their stored listings serve the next boot.
      assert_includes out, "load_path:  hit"
      assert_includes out, "(10 items)"
    end
  end

  test "a bundle that cannot be set up: check cannot tell (exit 3), precompile builds no index" do
    with_files([["Gemfile", "gem(\n"], ["tmp/cache/loadout/"]]) do |app|
      Loadout::Store.open(store_path(app)) { |s| s.put("st/other", "1") }
      env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
      out = StringIO.new
      status = Loadout::CLI.new(%w[check --no-iseq --no-yaml --no-json], out: out, err: StringIO.new, env: env).run
      assert_equal 3, status, out.string
      assert_match(/^load_path:  cannot tell \(bundler\/setup failed in #{Regexp.escape(app)}: /, out.string)
      out = StringIO.new
      err = StringIO.new
      status = Loadout::CLI.new(%w[precompile --no-iseq --no-yaml --no-json], out: out, err: err, env: env).run
      assert_equal 0, status, err.string
      assert_includes out.string, "load-path index not built (bundler/setup failed in #{app}: "
      assert_includes err.string, "loadout precompile: bundler/setup failed in #{app}: "
    end
  end

  # The API on a store, without an app: the answer follows the index and the files.
  test "LoadPath.check: miss, then hit once precompiled, stale with the changed dir, trust: :all trusts" do
    files = [["gems/g-1.0/lib/g.rb", ""], ["app/lib/a.rb", ""], ["app/lib/sub/b.rb", ""], ["later/c.rb", ""]]
    with_files(files) do |dir|
      backdate(dir)
      store = Loadout::TestSupport::FakeStore.open
      lp = ["#{dir}/app/lib", "#{dir}/gems/g-1.0/lib"]
      roots = ["#{dir}/gems"]
      check = ->(**kw) { Loadout::LoadPath.check(store: store, load_path: lp, stable_roots: roots, **kw) }
      assert_equal :miss, check.call[:status]
      built = Loadout::LoadPath.precompile(store: store, load_path: lp, stable_roots: roots, extra: ["#{dir}/later"])
      refute built[:restored]
      assert_equal 3, built[:listed]
      assert_equal({ status: :hit, entries: [] }, check.call(later: ["#{dir}/later"]).slice(:status, :entries))
      assert Loadout::LoadPath.precompile(store: store, load_path: lp, stable_roots: roots)[:restored],
             "precompile is idempotent"
      # Other stable roots: the gem dir is then an app dir, checked against its dirs (unchanged).
      assert_equal :hit, Loadout::LoadPath.check(store: store, load_path: lp, stable_roots: [])[:status]

      File.write("#{dir}/app/lib/sub/new.rb", "")
      File.write("#{dir}/gems/g-1.0/lib/new.rb", "") # stable: trusted as stored, like a boot does
      File.write("#{dir}/later/new.rb", "")
      answer = check.call(later: ["#{dir}/later"])
      assert_equal :stale, answer[:status]
      assert_equal [{ path: "#{dir}/app/lib", status: :stale, reason: "#{dir}/app/lib/sub mtime changed" },
                    { path: "#{dir}/later", status: :stale, reason: "added after boot; #{dir}/later mtime changed" }],
                   answer[:entries]
      assert_equal :hit, check.call(trust: :all)[:status], "trust: :all checks nothing, like its boots"
      assert_equal :stale, Loadout::LoadPath.check(store: store, load_path: lp, stable_roots: [])[:status],
                   "the gem dir, as an app dir, is stale now"
      assert_equal :missing, check.call(later: ["#{dir}/gems"])[:entries].last[:status]
    end
  end

  test "the boot record: rewritten only when it changes; a damaged or foreign one reads as none" do
    rec = Loadout::LoadPath::BootRecord
    store = Loadout::TestSupport::FakeStore.open
    assert_nil rec.load(store)
    record = { load_path: ["/app/lib", "#<Pathname>"], stable_roots: ["/gems"], later: ["/app/x"],
               lock: ["/app/Gemfile.lock", "1.2.3"], before: ["/app/boot.rb"] }
    rec.save(store, record)
    assert_equal record, rec.load(store)
    writes = store.puts_count
    rec.save(store, record.dup)
    assert_equal writes, store.puts_count, "the same record is not written again"
    ["garbage", Marshal.dump([rec::FORMAT + 1, record]), Marshal.dump([rec::FORMAT, record.merge(load_path: [1])]),
     Marshal.dump([rec::FORMAT, record.merge(lock: "x")]), Marshal.dump([rec::FORMAT, record.merge(before: [1])]),
     Marshal.dump([rec::FORMAT, record.merge(before: nil)])].each do |raw|
      store.put(rec::KEY, raw)
      assert_nil rec.load(store), raw.inspect
    end
  end

  test "LoadPath.check validates its options like install!" do
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.check(store: Object.new, load_path: []) }
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.check(store: nil, load_path: []) }
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.check(store: Loadout::TestSupport::FakeStore.open, load_path: [], trust: :maybe) }
  end
end

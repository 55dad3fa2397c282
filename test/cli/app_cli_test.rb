# frozen_string_literal: true

require "test_helper"
require "support/generated_app"
require "support/check_output"
require "digest"

# The CLI as users meet it: `loadout` run in a generated app with a vendored bundle (gems with
# YAML and Ruby that do not parse in their specs, fixtures and generator templates), a path
# gem, and config files the boot reads.
class AppCLITest < Minitest::Test
  include Loadout::TestSupport::GeneratedApp
  include Loadout::TestSupport::CheckOutput

  def plain_boot(app)
    boot_generated!(app, env: { "APP_WITHOUT_LOADOUT" => "1" }).stdout.sub("loadout=off\n", "")
  end

  # { key => digest of the value } of the store at +path+.
  def entries(path)
    Loadout::Store.open(path, readonly: true) { |s| s.each.to_h { |k, v| [k, Digest::SHA256.hexdigest(v)] } }
  end

  def boot!(app, env: {})
    boot_generated!(app, env: env).tap { |r| r.stdout.sub!("loadout=on\n", "") }
  end

  test "precompile: files that do not load are skipped, not failed (exit 0); a vendored bundle is left to --gemfile" do
    with_generated_app do |app|
      run = loadout(app, "precompile", status: 0)
      assert_match(/ 2 skipped \(do not load\); 0 failed;/, run.stdout)
      assert_includes run.stdout, "#{app}/test/fixtures/broken.yml: Psych::SyntaxError"
      assert_includes run.stdout, "#{app}/gems/widget/lib/widget/templates/config.yml: Psych::SyntaxError"
      refute_includes run.stdout + run.stderr, "vendor/bundle", "without --gemfile the bundle in the app is not walked"
      refute_includes run.stderr, "failed:"

      gems = loadout(app, "precompile", "--gemfile", status: 0)
      assert_match(/ 3 skipped \(do not load\); 0 failed;/, gems.stdout)
      assert_includes gems.stdout, "fakeyaml-1.0.0/lib/generators/fakeyaml/templates/config.yml: Psych::SyntaxError"
      # Only the gems' load path dirs: their specs and fixtures are not the gem's code.
      refute_includes gems.stdout, "spec/fixtures"
    end
  end

  test "precompile --gemfile keys gem files as the app's boot does: its first boot hits them" do
    with_generated_app do |app|
      expected = plain_boot(app)
      # Inline (-j 1): worker processes would inherit whatever Gem.path this process was given.
      loadout(app, "precompile", "--gemfile", "-j", "1", status: 0)
      first = boot!(app, env: { "LOADOUT_LOG" => "1" })
      assert_equal expected, first.stdout
      missed = first.stderr.scan(/^loadout: iseq miss (\S+)/).flatten
      assert_empty missed.grep(%r{/vendor/bundle/|/gems/widget/|#{Regexp.escape(app)}/lib/}), first.stderr
      assert_match(%r{^loadout: iseq (hit|revalidated) #{Regexp.escape(app)}/vendor/bundle/.*/rake\.rb$}, first.stderr)
    end
  end

  test "check right after precompile says HIT (exit 0) and does not count files that do not parse" do
    with_generated_app do |app|
      assert_includes loadout(app, "check", status: 2).stdout, "verdict:    MISS"
      loadout(app, "precompile", "--gemfile", status: 0)
      run = loadout(app, "check", status: 0)
      assert_includes run.stdout, "no boot has recorded what it loads yet"
      assert_match(/^yaml: .*; not counted: 2 unloadable$/, run.stdout)
      refute_includes run.stdout, "vendor/bundle", "the bundle inside the app is not walked without --gemfile"
      assert_includes run.stdout, "verdict:    HIT"
      gems = loadout(app, "check", "--gemfile", status: 0)
      assert_match(/^yaml: .*; not counted: 3 unloadable$/, gems.stdout)
    end
  end

  test "check after a boot answers for the files that boot loaded, with the entries it used" do
    with_generated_app do |app|
      boot!(app)
      run = loadout(app, "check", status: 0)
      assert_match(/^files:      those a boot loads through the cache, as recorded .* by pid \d+ \(`app\.rb`\)$/,
                   run.stdout)
      # app.rb's requires: the app's files, its path gem's, the vendored gems', Ruby's own.
      count = run.stdout[/^iseq: +(\d+) files: \1 hit$/, 1].to_i
      assert_operator count, :>, 40, run.stdout
      assert_match(/^yaml: +3 files: 3 hit$/, run.stdout)
      assert_match(/^json: +1 file: 1 hit$/, run.stdout)
      assert_loaded_before_setup(run.stdout, "#{app}/app.rb", "#{app}/config/boot.rb")
      assert_includes run.stdout, "verdict:    HIT"

      # The next boot will miss an edited file, and cannot load a deleted one.
      File.write(File.join(app, "lib/shop/pricing.rb"), File.read(File.join(app, "lib/shop/pricing.rb")) + "# edited\n")
      File.write(File.join(app, "config/app.yml"), "name: shop\nitems: [1, 2, 3]\n")
      stale = loadout(app, "check", status: 2)
      assert_includes stale.stdout, "  stale: #{app}/lib/shop/pricing.rb (content changed since it was cached)"
      assert_includes stale.stdout, "  stale: #{app}/config/app.yml (content changed since it was cached)"
      assert_includes stale.stdout, "verdict:    MISS"
      refute_includes stale.stdout, "unused.rb", "a file no boot loads is not checked"
      refute_includes stale.stdout, "fixtures", "a file no boot loads is not checked"
    end
  end

  test "stats: the last boot is the last boot (a warm one too, without a store write), hit rates count fallbacks" do
    with_generated_app do |app|
      # A require the index leaves to Ruby (a String subclass), so the rate has fallbacks to count.
      File.open(File.join(app, "app.rb"), "a") { |f| f.puts 'require Class.new(String).new("json")' }
      # The copy gave every file a fresh ctime: an entry verified within the racy window after it
      # is confirmed by digest on the next boot (a write). Wait it out, as boot_test does.
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      cold = boot!(app)
      cold_pid = File.read(File.join(cache_dir(app), "store.last-boot"))[/^pid (\d+)$/, 1]
      writer = boot!(app, env: { "LOADOUT_STATS" => "1" })
      store = File.join(cache_dir(app), "store")
      before = [Digest::SHA256.file(store).hexdigest, entries(store)]
      last = boot!(app, env: { "LOADOUT_STATS" => "1" })
      after = entries(store)
      changed = (before[1].keys | after.keys).reject { |k| before[1][k] == after[k] }
      assert_equal before[0], Digest::SHA256.file(store).hexdigest,
                   "a warm boot that hits everything writes nothing to the store; changed: #{changed.inspect}\n" \
                   "#{last.stderr}"
      assert_equal cold.stdout, last.stdout
      run = loadout(app, "stats", status: 0)
      last_pid = last.stderr[/loadout stats \(pid (\d+)/, 1]
      assert_match(/^last boot:  .* pid #{last_pid} `app\.rb` \(.*\).*; wrote nothing/, run.stdout)
      # The loaded files were recorded by the first boot: the next ones loaded the same files.
      refute_equal cold_pid, writer.stderr[/loadout stats \(pid (\d+)/, 1]
      assert_match(
        /^loaded files: \d+ Ruby, 3 YAML, 1 JSON files through the compile cache, recorded .* by pid #{cold_pid} /,
        run.stdout
      )
      lp = run.stdout[/^  load_path +(.*hit rate.*)$/, 1]
      numbers = lp.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }
      assert_operator numbers["fallbacks"], :>, 0, lp
      lookups = numbers["hits"] + numbers["misses"] + numbers["fallbacks"]
      rate = format("%.1f%%", 100.0 * numbers["hits"] / lookups)
      assert_includes lp, "(hit rate #{rate}: #{numbers["hits"]} of #{lookups} lookups; " \
                          "#{numbers["fallbacks"]} fell back to Ruby)"
    end
  end

  test "a warm boot writes nothing, LOADOUT_STATS or not, and its last-boot record says whether it wrote" do
    with_generated_app do |app|
      File.open(File.join(app, "app.rb"), "a") { |f| f.puts 'require_relative "lib/shop/unused" if ENV["EXTRA"]' }
      # (Past the racy window after the copy: see the stats test above.)
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      boot!(app, env: { "EXTRA" => "1" }) # every file the next boots load is cached, this one's files recorded
      store = File.join(cache_dir(app), "store")
      # A warm boot that loads fewer files than the recorded boot, watched with LOADOUT_STATS: it
      # hits everything. It used to rewrite the record of loaded files (and the load path's), 1.7 MB
      # on a 333-gem app, while its last-boot record said "wrote nothing".
      before = File.binread(store)
      warm = boot!(app, env: { "LOADOUT_STATS" => "1" })
      assert_match(/^  iseq: +hits=\d+ misses=0 stale=0 revalidated=0 /, warm.stderr)
      assert_equal before.bytesize, File.size(store), "a warm boot appended to the store:\n#{warm.stderr}"
      assert_equal before, File.binread(store)
      assert_match(/^last boot:  .*; wrote nothing/, loadout(app, "stats", status: 0).stdout)

      # A boot that does write says so.
      File.write(File.join(app, "lib/shop/pricing.rb"), "#{File.read(File.join(app, "lib/shop/pricing.rb"))}# edited\n")
      boot!(app, env: { "LOADOUT_STATS" => "1" })
      assert_operator File.size(store), :>, before.bytesize
      assert_match(/^last boot:  .*; wrote to the cache/, loadout(app, "stats", status: 0).stdout)
    end
  end

  test "precompile makes the cache dir as a boot does: 0700 (0750 shared), whatever the umask" do
    with_generated_app do |app|
      FileUtils.rm_rf(File.join(app, "tmp"))
      FileUtils.mkdir(File.join(app, "tmp"), mode: 0o755)
      loadout(app, "precompile", "--no-iseq", "--no-yaml", status: 0)
      assert_equal 0o700, File.stat(File.join(app, "tmp/cache")).mode & 0o777
      assert_equal 0o700, File.stat(cache_dir(app)).mode & 0o777
      FileUtils.rm_rf(File.join(app, "tmp/cache"))
      loadout(app, "precompile", "--no-iseq", "--no-yaml", status: 0, env: { "LOADOUT_TRUST_SHARED_CACHE" => "1" })
      assert_equal 0o750, File.stat(cache_dir(app)).mode & 0o777
      # A boot into the same kind of fresh dir: the same modes.
      FileUtils.rm_rf(File.join(app, "tmp/cache"))
      boot!(app)
      assert_equal 0o700, File.stat(cache_dir(app)).mode & 0o777
    end
  end

  test "stats shows durations as LOADOUT_STATS names them: load_ms=, in milliseconds" do
    with_generated_app do |app|
      boot!(app)
      boot!(app)
      run = loadout(app, "stats", status: 0)
      line = run.stdout[/^  iseq +hits=.*$/] or flunk(run.stdout)
      assert_match(/ load_ms=\d+\.\d /, line)
      assert_match(/ compile_ms=\d+\.\d /, line)
      refute_match(/_ns=/, run.stdout)
    end
  end

  test "clean --kind with an unknown kind is a usage error naming the kinds" do
    with_generated_app do |app|
      boot!(app)
      run = loadout(app, "clean", "--kind", "foo", status: 1)
      assert_includes run.stderr, "loadout: clean: unknown kind foo; use iseq, yaml, json, load_path, stats"
      assert_match(/^Usage: loadout clean/, run.stderr)
      assert_empty run.stdout
      stats_keys = entries(File.join(cache_dir(app), "store")).keys.grep(%r{\Ast/})
      refute_empty stats_keys
      assert_includes loadout(app, "clean", "--kind", "stats", status: 0).stdout, "deleted #{stats_keys.size} entries"
      assert_empty entries(File.join(cache_dir(app), "store")).keys.grep(%r{\Ast/})
      refute File.exist?(File.join(cache_dir(app), "store.last-boot")), "--kind stats removes the last boot's numbers"
    end
  end

  test "an unwritable cache dir: precompile, compact and clean say so once, naming it and the fix, exit 1" do
    with_generated_app do |app|
      boot!(app)
      FileUtils.chmod_R("a+rX", File.dirname(app))
      FileUtils.chmod(0o555, cache_dir(app))
      env = { "HOME" => File.dirname(app) }
      %w[precompile compact clean].each do |command|
        args = command == "clean" ? %w[clean --all] : [command]
        run = loadout(app, *args, env: env, unprivileged: true)
        assert_equal 1, run.status.exitstatus, "#{command}: #{run.stdout}\n#{run.stderr}"
        assert_equal 1, run.stderr.lines.grep(/not writable/).size, run.stderr
        assert_includes run.stderr, "loadout: #{command}: #{cache_dir(app)}"
        assert_includes run.stderr, "fix: "
        refute_match(/Errno|EACCES|--debug/, run.stderr)
      end
      assert File.exist?(File.join(cache_dir(app), "store")), "nothing was removed"
    ensure
      FileUtils.chmod(0o755, cache_dir(app))
    end
  end

  test "bench times the app it runs in (plain, cold, warm, CI-style) and leaves its cache alone" do
    with_generated_app do |app|
      run = loadout(app, "bench", "--rounds", "1", "--", RbConfig.ruby, "app.rb", status: 0)
      assert_includes run.stdout, "loadout bench: `#{RbConfig.ruby} app.rb` in #{app}, 1 boot each"
      rows = ["plain Ruby (LOADOUT_DISABLE=1)", "loadout, cold cache (empty)", "loadout, warm cache",
              "loadout, CI-style cache"]
      figures = rows.map do |row|
        line = run.stdout[/^  #{Regexp.escape(row)} +\d+ ms +\d+ ms +\d+\.\d\dx$/] or flunk(run.stdout)
        [line.index(" ms "), line[/(\d+) ms/, 1].to_f, line[/(\d+\.\d\d)x$/, 1].to_f]
      end
      assert_equal 1, figures.map(&:first).uniq.size, "one column for every row:\n#{run.stdout}"
      plain_ms = figures.first[1]
      # A time ratio (below 1 is faster), as loadout's figures are everywhere else.
      figures.each { |_, ms, ratio| assert_in_delta ms / plain_ms, ratio, 0.05 * ratio + 0.01, run.stdout }
      refute File.exist?(cache_dir(app)), "the app's own cache dir is not created"

      bad = loadout(app, "bench", "--rounds", "1", "--", RbConfig.ruby, "-e", "1", status: 1)
      assert_includes bad.stderr, "did not set loadout up"
    end
  end

  test "LOADOUT_DISABLE_YAML_CACHE leaves YAML to Psych and keeps the other caches" do
    with_generated_app do |app|
      expected = plain_boot(app)
      boot!(app)
      run = boot!(app, env: { "LOADOUT_DISABLE_YAML_CACHE" => "1", "LOADOUT_STATS" => "1" })
      assert_equal expected, run.stdout
      served = lambda do |kind|
        line = run.stderr[/^  #{kind}: +(hits=.*)$/, 1] or flunk(run.stderr)
        counts = line.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }
        [counts["hits"] + counts["revalidated"], counts["misses"]]
      end
      assert_equal [0, 0], served.(:yaml), "YAML is not looked up at all"
      assert_equal [1, 0], served.(:json)
      assert_operator served.(:iseq)[0], :>, 40
    end
  end

  test "LOADOUT_STATS labels the report of each forked worker and counts only its own work" do
    script = <<~RUBY
      require_relative "app"
      pids = Array.new(2) { fork { require_relative "lib/shop/unused" } }
      pids.each { |pid| Process.wait(pid) }
    RUBY
    with_generated_app do |app|
      File.write(File.join(app, "forks.rb"), script)
      run = app_ruby(app, "forks.rb", env: { "LOADOUT_STATS" => "1" })
      assert run.success?, run.stderr
      headers = run.stderr.lines.grep(/^loadout stats /).map(&:chomp)
      assert_equal 3, headers.size, run.stderr
      parent = headers.grep(/, boot;/).first or flunk(run.stderr)
      parent_pid = parent[/pid (\d+)/, 1]
      assert_includes parent, "2 forked workers report separately"
      workers = headers - [parent]
      workers.each do |h|
        assert_match(/\Aloadout stats \(pid \d+, worker forked from pid #{parent_pid}: counts since the fork, /, h)
      end
      reports = run.stderr.split(/^(?=loadout stats )/)
      reports.reject { |r| r.start_with?(parent) }.each do |report|
        assert_match(/^  requires: +1 calls, 1 loaded, 0 raised$/, report)
      end
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "stringio"
require "loadout/cli"

class CLITest < Minitest::Test
  # The ISeq cache is CRuby's (bin/test --jruby runs this file too): off elsewhere, said so.
  ISEQ = RUBY_ENGINE == "ruby"
  Run = Struct.new(:status, :out, :err)

  def cli(*argv, app:)
    out = StringIO.new
    err = StringIO.new
    env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
    status = Loadout::CLI.new(argv, out: out, err: err, env: env).run
    Run.new(status, out.string, err.string)
  end

  def with_app(files = [], &block)
    with_files([["Gemfile", ""], *files], &block)
  end

  def store_path(app)
    File.join(app, "tmp/cache/loadout/store")
  end

  def with_store(app, &block)
    FileUtils.mkdir_p(File.dirname(store_path(app)))
    Loadout::Store.open(store_path(app), &block)
  end

  def assert_usage_error(run, message)
    assert_equal 1, run.status
    assert_empty run.out
    assert_includes run.err, "loadout: #{message}"
    assert_match(/^Usage: loadout/, run.err)
  end

  # On CRuby, test/gc/gc_settings_test.rb has what it prints instead.
  test "loadout gc off CRuby says the RUBY_GC_* settings are CRuby's, exit 0" do
    skip "#{RUBY_ENGINE} is CRuby: loadout gc recommends settings here" if ISEQ

    with_app do |app|
      run = cli("gc", app: app)
      assert_equal 0, run.status
      assert_empty run.out
      assert_includes run.err, "the RUBY_GC_* settings are CRuby's; #{RUBY_ENGINE}'s heap is the JVM's"
    end
  end

  test "--help, help and -h print the usage on stdout and exit 0" do
    with_app do |app|
      %w[--help help -h].each do |arg|
        run = cli(arg, app: app)
        assert_equal 0, run.status
        Loadout::CLI::COMMANDS.each_key { |name| assert_includes run.out, "  #{name}" }
        assert_empty run.err
      end
    end
  end

  test "every command has --help" do
    with_app do |app|
      Loadout::CLI::COMMANDS.each_key do |command|
        run = cli(command, "--help", app: app)
        assert_equal 0, run.status, "#{command} --help: #{run.err}"
        assert_match(/\AUsage: loadout #{command}/, run.out)
        assert_includes run.out, "--cache-dir DIR"
      end
    end
  end

  test "no command, an unknown command, a bad option: message and usage on stderr, exit 1" do
    with_app do |app|
      assert_usage_error(cli(app: app), "no command given")
      assert_usage_error(cli("precompiel", app: app), "unknown command: precompiel")
      assert_usage_error(cli("stats", "--bogus", app: app), "stats: invalid option: --bogus")
      assert_usage_error(cli("precompile", "-j", "many", app: app), "precompile: invalid argument: -j many")
      assert_usage_error(cli("precompile", "-j", "-1", app: app), "precompile: invalid argument")
      assert_usage_error(cli("precompile", File.join(app, "missing"), app: app), "precompile: not a directory")
      assert_usage_error(cli("clean", app: app), "clean: give --all, --kind or --variant")
      assert_usage_error(cli("clean", "--all", "--kind", "iseq", app: app), "clean: --all cannot be combined")
      assert_usage_error(cli("compact", "--cache-dir", app: app), "compact: missing argument: --cache-dir")
      %w[precompile check].each do |command|
        assert_usage_error(cli(command, "--exclude", "(", app: app),
                           "#{command}: invalid argument: --exclude ( (not a regular expression: ")
      end
    end
  end

  test "an unexpected error is one line without a backtrace, unless --debug" do
    with_app do |app|
      # (A bug stood in for: what an --exclude argument becomes raises something no rule expects.)
      selection = Loadout::CLI::FileSelection.singleton_class
      selection.alias_method(:__real_exclude, :exclude)
      selection.define_method(:exclude) { |_| raise KeyError, "a bug" }
      run = cli("precompile", "--exclude", "x", app: app)
      assert_equal 1, run.status
      assert_includes run.err, "loadout: KeyError: a bug"
      assert_includes run.err, "(run with --debug for the backtrace)"
      refute_match(/\.rb:\d+:in /, run.err)
      debug = cli("--debug", "precompile", "--exclude", "x", app: app)
      assert_equal 1, debug.status
      assert_match(/\.rb:\d+:in /, debug.err)
    ensure
      selection.remove_method(:exclude)
      selection.alias_method(:exclude, :__real_exclude)
      selection.remove_method(:__real_exclude)
    end
  end

  test "a bad LOADOUT_* value is reported as one line, exit 1" do
    with_app do |app|
      err = StringIO.new
      status = Loadout::CLI.new(["stats"], out: StringIO.new, err: err, env: { "LOADOUT_READONLY" => "nah" }).run
      assert_equal 1, status
      assert_equal "loadout: LOADOUT_READONLY: \"nah\" is not accepted; use 1/0/true/false/yes/no\n", err.string
    end
  end

  test "bench: bad arguments are usage errors" do
    with_app do |app|
      assert_usage_error(cli("bench", "--rounds", "x", app: app), "bench: invalid argument: --rounds x")
      assert_usage_error(cli("bench", "--rounds", "0", app: app), "bench: invalid argument")
      assert_usage_error(cli("bench", "extra", app: app), "bench: unexpected argument extra (put the command after --)")
      assert_usage_error(cli("bench", "--", app: app), "bench: no command after --")
    end
  end

  test "version" do
    with_app do |app|
      run = cli("version", app: app)
      assert_equal 0, run.status
      assert_includes run.out, "loadout #{Loadout::VERSION} (#{Loadout::BACKEND} backend"
    end
  end

  test "stats without a store says so" do
    with_app do |app|
      run = cli("stats", app: app)
      assert_equal 0, run.status
      assert_includes run.out, "no store at #{store_path(app)}"
    end
  end

  test "stats: size, live/garbage, entries per kind and variant, last boot" do
    with_app do |app|
      with_store(app) do |s|
        s.put("cc/i/v1/~/app/a.rb", "x" * 100)
        s.put("cc/s/i/v1/~/app/a.rb", "s")
        s.put("cc/i/v1/~/app/b.rb", "x")
        s.put("cc/i/v2/~/app/a.rb", "x")
        s.put("cc/y/v1/~/config/en.yml", "y")
        s.put("lp/idx/abc", "i")
        s.put("cc/j/v1/~/k.json", "1")
        s.delete("cc/j/v1/~/k.json")
        s.put("st/other", "x")
      end
      last_boot = { "at" => 0, "pid" => 7, "program" => "bin/rails", "backend" => "native", "ruby" => "3.1.2",
                    "setup_ms" => 1.5, "wrote" => false,
                    "load_path" => { "hits" => 9, "misses" => 0, "fallbacks" => 1 },
                    "compile_cache" => { "iseq" => { "hits" => 3, "misses" => 1 } } }
      cache_dir = Loadout::Trust::DirHandle.open(File.dirname(store_path(app)), false)
      Loadout::LastBoot.write(cache_dir, File.basename(store_path(app)), last_boot)
      cache_dir.close
      run = cli("stats", app: app)
      assert_equal 0, run.status, run.err
      assert_includes run.out, "store:      #{store_path(app)}"
      assert_includes run.out, "live_records=7"
      assert_includes run.out, "garbage_records=2"
      refute_match(/writable=|pending_writes=/, run.out, "the command's own read-only handle is not the store's state")
      assert_includes run.out, "entries:    7 live"
      assert_includes run.out, "  iseq      4 (v1: 3, v2: 1)"
      assert_includes run.out, "  yaml      1 (v1: 1)"
      assert_includes run.out, "  load_path 1 (idx: 1)"
      assert_includes run.out, "  stats     1\n"
      assert_includes run.out, "pid 7 `bin/rails` (native, Ruby 3.1.2), setup 1.5 ms; wrote nothing"
      assert_includes run.out, "hits=9 misses=0 fallbacks=1  (hit rate 90.0%: 9 of 10 lookups; 1 fell back to Ruby)"
      assert_includes run.out, "  iseq          hits=3 misses=1  (hit rate 75.0%: 3 of 4 lookups)"
    end
  end

  test "keys are classified by the components' layouts" do
    classify = Loadout::CLI::StoreCommands.method(:classify)
    assert_equal ["iseq", "0123abcd"], classify.("cc/i/0123abcd/~/app/x.rb")
    assert_equal ["yaml", "0123abcd"], classify.("cc/s/y/0123abcd/rack-3.0/lib/x.yml")
    assert_equal ["json", "v"], classify.("cc/j/v//abs/path.json")
    assert_equal ["load_path", "ent"], classify.("lp/ent//usr/lib/ruby")
    assert_equal ["stats", nil], classify.("st/loaded")
    assert_equal ["other", nil], classify.("other")
  end

  test "compact rewrites the store without garbage" do
    with_app do |app|
      with_store(app) do |s|
        50.times { |i| s.put("cc/i/v1/f#{i}", "x" * 1000) }
        40.times { |i| s.delete("cc/i/v1/f#{i}") }
      end
      before = File.size(store_path(app))
      run = cli("compact", app: app)
      assert_equal 0, run.status, run.err
      assert_operator File.size(store_path(app)), :<, before / 2
      assert_match(/compact: .* -> /, run.out)
      with_store(app) { |s| assert_equal 10, s.size }
    end
  end

  test "clean --kind / --variant delete only matching entries" do
    with_app do |app|
      with_store(app) do |s|
        s.put("cc/i/v1/~/a.rb", "1")
        s.put("cc/s/i/v1/~/a.rb", "1")
        s.put("cc/i/v2/~/a.rb", "1")
        s.put("cc/y/v1/~/a.yml", "1")
        s.put("lp/idx/x", "1")
      end
      run = cli("clean", "--kind", "iseq", "--variant", "v1", app: app)
      assert_equal 0, run.status, run.err
      assert_includes run.out, "deleted 2 entries"
      assert_empty run.err
      # A variant no entry has (a typo, or cleaned already): still a success, with the names there are.
      run = cli("clean", "--variant", "v9", app: app)
      assert_equal 0, run.status, run.err
      assert_includes run.out, "deleted 0 entries"
      assert_equal "loadout clean: no entry has variant v9 (the store's: idx, v1, v2; `loadout stats` lists " \
                   "them by kind)\n", run.err
      with_store(app) { |s| assert_equal %w[cc/i/v2/~/a.rb cc/y/v1/~/a.yml lp/idx/x], s.each.map { |k, _| k }.sort }
      assert_equal 0, cli("clean", "--kind", "yaml", "--kind", "load_path", app: app).status
      with_store(app) { |s| assert_equal %w[cc/i/v2/~/a.rb], s.each.map { |k, _| k } }
      self_cache = File.join(app, "tmp/cache/loadout/store.self-0123456789abcdef")
      File.write(self_cache, "loadout's own compiled files")
      cli("clean", "--kind", "iseq", "--variant", "v2", app: app)
      assert File.exist?(self_cache), "a --variant clean leaves loadout's own files alone"
      assert_equal 0, cli("clean", "--kind", "iseq", app: app).status
      refute File.exist?(self_cache), "--kind iseq also drops loadout's own compiled files"
    end
  end

  test "clean --all removes the store's files and nothing else" do
    with_app([["tmp/cache/loadout/keep.txt", "mine"]]) do |app|
      with_store(app) { |s| s.put("cc/i/v1/a", "1") }
      run = cli("clean", "--all", app: app)
      assert_equal 0, run.status, run.err
      refute File.exist?(store_path(app))
      assert_empty Dir.glob("#{store_path(app)}*")
      assert_equal "mine", File.read(File.join(app, "tmp/cache/loadout/keep.txt"))
    end
  end

  test "--cache-dir points every command elsewhere" do
    with_app do |app|
      other = File.join(app, "elsewhere")
      FileUtils.mkdir_p(other)
      Loadout::Store.open(File.join(other, "store")) { |s| s.put("cc/i/v1/a", "1") }
      run = cli("stats", "--cache-dir", other, app: app)
      assert_includes run.out, "entries:    1 live"
    end
  end

  test "check without a store: the next boot will miss, exit 2" do
    with_app do |app|
      run = cli("check", app: app)
      assert_equal 2, run.status
      assert_includes run.out, "store:      missing"
      assert_includes run.out, "verdict:    MISS"
    end
  end

  test "check with a store reports per component" do
    with_app([["lib/a.rb", "A = 1"]]) do |app|
      with_store(app) { |s| s.put("st/x", "1") }
      run = cli("check", app: app)
      assert_includes [0, 2, 3], run.status, run.err
      assert_includes run.out, "store:      #{store_path(app)} (1 entries)"
      assert_match(/^load_path: /, run.out)
      assert_match(/^iseq: /, run.out)
      assert_match(/^verdict: /, run.out)
    end
  end

  test "precompile compiles the app's files and prints one summary line off a TTY" do
    files = Array.new(5) { |i| ["lib/f#{i}.rb", "X#{i} = #{i}"] } +
            [["config/en.yml", "en: {a: 1}"], ["config/s.json", "{}"], ["Rakefile", ""], ["node_modules/x.rb", ""]]
    with_app(files) do |app|
      run = cli("precompile", app: app)
      assert_equal 0, run.status, run.err
      counts = ISEQ ? "8 files \\(iseq 6, yaml 1, json 1\\)" : "2 files \\(yaml 1, json 1\\)"
      assert_match(/\Aloadout precompile: #{counts} in \d+\.\d s with 1 worker; /, run.out)
      assert_includes run.out, "; 0 skipped (do not load); 0 failed; "
      assert_equal 1, run.out.lines.size
      assert File.file?(store_path(app)), "precompile creates the store"
    end
  end

  test "precompile -j 2 spreads the work over worker processes" do
    files = Array.new(80) { |i| ["config/f#{i}.json", "{\"x\": #{i}}"] } # (JSON: every engine caches it)
    with_app(files) do |app|
      run = cli("precompile", "-j", "2", "--no-iseq", "--no-yaml", app: app)
      assert_equal 0, run.status, run.err
      assert_match(/80 files \(json 80\) in .* with 2 workers; 0 skipped \(do not load\); 0 failed/, run.out)
    end
  end

  test "precompile reports files that do not load as skipped, not failed: exit 0" do
    files = [["lib/ok.rb", "A = 1"], ["lib/bad.rb", "def ("], ["config/bad.yml", "a: [1"], ["config/bad.json", "{"]]
    with_app(files) do |app|
      run = cli("precompile", app: app)
      # A Ruby syntax error is not reported: the ISeq cache lets Ruby compile a miss itself, and
      # the app would fail on that file anyway (Bootsnap skips them too).
      assert_equal 0, run.status, run.out + run.err
      counts = ISEQ ? "4 files \\(iseq 2, yaml 1, json 1\\)" : "2 files \\(yaml 1, json 1\\)"
      assert_match(/#{counts} .* 2 skipped \(do not load\); 0 failed/, run.out)
      assert_includes run.out, "    #{app}/config/bad.yml: Psych::SyntaxError: " # (libyaml's wording, or JRuby's)
      assert_includes run.out, "    #{app}/config/bad.json: JSON::ParserError"
      refute_includes run.err, "failed"
    end
  end

  test "precompile: a worker that dies is a failure, exit 1" do
    files = Array.new(70) { |i| ["config/f#{i}.json", "{}"] }
    with_app(files) do |app|
      pool = Loadout::CLI::WorkerPool.singleton_class
      pool.alias_method(:__real_run, :run)
      pool.define_method(:run) { |items, _jobs, _args, &block| items.each { |i| block.call("ok\t#{i}") } && 1 }
      run = cli("precompile", "-j", "2", app: app)
      assert_equal 1, run.status
      assert_includes run.err, "failed: 1 worker process(es) exited with an error"
    ensure
      pool.remove_method(:run)
      pool.alias_method(:run, :__real_run)
      pool.remove_method(:__real_run)
    end
  end

  test "precompile --gemfile covers the rest of the bundle's $LOAD_PATH (gems, Ruby's own) and gems' data dirs" do
    with_app([["lib/app.rb", ""], ["gems/engine/engine.gemspec", ""], ["gems/engine/lib/engine.rb", ""],
              ["gems/engine/config/locales/en.yml", "en: {}"], ["gems/engine/app/models/x.rb", ""]]) do |app|
      home = File.join(app, "vendor/bundle/ruby/3.1.0")
      i18n = File.join(home, "gems/rails-i18n-7.0.0")
      FileUtils.mkdir_p(["#{i18n}/lib", "#{i18n}/rails/locale", "#{i18n}/spec"])
      outside = File.join(File.dirname(app), "outside/lib")
      FileUtils.mkdir_p(outside)
      load_path = ["#{app}/lib", "#{app}/gems/engine/lib", "#{i18n}/lib", outside, RbConfig::CONFIG["rubylibdir"]]
      bundle = Loadout::CLI::AppBundle::Paths.new(gem_path: [home, *Gem.path], load_path: load_path)
      roots = Loadout::CLI::FileSelection.new(app, bundle, []).bundle_roots
      # The vendored gem and its locale dir; a dir outside the app (a path gem elsewhere); Ruby's
      # standard library. Not the app's own dirs (the app root's walk has them), nor a gem's spec/.
      assert_equal ["#{i18n}/lib", outside, RbConfig::CONFIG["rubylibdir"], "#{i18n}/rails"], roots
      # A path gem inside the app is the app's: its app/ and config/ are walked with the app.
    end
  end

  test "precompile -- COMMAND: a boot that fails or does not set loadout up is exit 1 with why; " \
       "the walk is done anyway" do
    lib = File.expand_path("../../lib", __dir__)
    with_app([["lib/a.rb", "A = 1"]]) do |app|
      run = cli("precompile", "--", RbConfig.ruby, "-e", "exit 0", app: app)
      assert_equal 1, run.status, run.out + run.err
      assert_includes run.err, "failed: `#{RbConfig.ruby} -e exit 0` did not set loadout up with this cache"
      assert_includes run.out, "did not set loadout up; 1 files (iseq 1)" if ISEQ
      assert File.file?(store_path(app)), "the walk ran"

      run = cli("precompile", "--", RbConfig.ruby, "-I", lib, "-e", 'require "loadout/setup"; warn "booted"; exit 3',
                app: app)
      assert_equal 1, run.status, run.out + run.err
      assert_includes run.err, "booted\n", "the boot's output goes to stderr"
      assert_includes run.err, "exited with status 3 (its output is above); " \
                               "the cache holds what it loaded before it failed"

      run = cli("precompile", "--", RbConfig.ruby, "-I", lib, "-e", 'require "loadout/setup"', app: app)
      assert_equal 0, run.status, run.out + run.err
      assert_match(/\Aloadout precompile: boot `.*require "loadout\/setup"` \(\d+\.\d s\): /, run.out)

      assert_usage_error(cli("precompile", "--", app: app), "precompile: no command after --")
      assert_includes cli("precompile", app: app).err,
                      "no boot was run; for a fully warm next boot give the app's boot after --"
    end
  end

  test "the progress bar draws only on a terminal" do
    tty = StringIO.new
    def tty.tty?
      true
    end
    bar = Loadout::CLI::Progress.new(tty, 2)
    2.times { bar.step }
    bar.finish
    assert_includes tty.string, "precompile [##############################] 2/2"
    assert tty.string.end_with?("\r\e[K"), "the bar is erased before the summary line"
    pipe = StringIO.new
    bar = Loadout::CLI::Progress.new(pipe, 2)
    2.times { bar.step }
    bar.finish
    assert_empty pipe.string
  end

  test "cpu_count honours cgroup v2 cpu.max and v1 cfs quotas" do
    with_files([["v2/cpu.max", "150000 100000\n"], ["max/cpu.max", "max 100000\n"],
                ["v1/cpu/cpu.cfs_quota_us", "100000\n"], ["v1/cpu/cpu.cfs_period_us", "100000\n"], ["none/"]]) do |dir|
      pool = Loadout::CLI::WorkerPool
      n = Etc.nprocessors
      assert_equal [n, 2].min, pool.cpu_count(File.join(dir, "v2"))
      assert_equal n, pool.cpu_count(File.join(dir, "max"))
      assert_equal 1, pool.cpu_count(File.join(dir, "v1"))
      assert_equal n, pool.cpu_count(File.join(dir, "none"))
    end
  end

  # `loadout check` against components that answer: the report and the exit status follow them.
  def stub_check(mod, impl)
    had = mod.singleton_class.method_defined?(:check)
    mod.singleton_class.alias_method(:__saved_check, :check) if had
    mod.define_singleton_method(:check, &impl)
    yield
  ensure
    mod.singleton_class.remove_method(:check)
    if had
      mod.singleton_class.alias_method(:check, :__saved_check)
      mod.singleton_class.remove_method(:__saved_check)
    end
  end

  def with_answers(load_path:, compile:)
    lp = Loadout::Boot.component(:LoadPath)
    cc = Loadout::Boot.component(:CompileCache)
    skip "LoadPath and CompileCache are needed" unless lp && cc
    stub_check(lp, ->(**_opts) { load_path }) do
      stub_check(cc, ->(path:, **_opts) { compile.call(path) }) do
        yield
      end
    end
  end

  test "check: every component hits, exit 0" do
    with_app([["lib/a.rb", "A = 1"], ["config/x.yml", "a: 1"]]) do |app|
      with_store(app) { |s| s.put("st/x", "1") }
      with_answers(load_path: { status: :hit }, compile: ->(_) { [:hit, nil] }) do
        run = cli("check", app: app)
        assert_equal 0, run.status, run.out + run.err
        assert_includes run.out, ISEQ ? "load_path:  hit\n" : "load_path:  off ("
        assert_includes run.out, ISEQ ? "iseq:       1 file: 1 hit\n" : "iseq:       off ("
        assert_includes run.out, "yaml:       1 file: 1 hit\n"
        assert_includes run.out, "verdict:    HIT"
      end
    end
  end

  test "check: a stale file and a moved load path are misses with reasons, exit 2" do
    # Off CRuby the load path index and the ISeq cache are off: YAML files miss there instead.
    kind, files, only = if ISEQ then ["iseq", %w[lib/a.rb lib/b.rb], %w[--no-yaml --no-json]]
                        else ["yaml", %w[config/a.yml config/b.yml], %w[--no-iseq --no-json]]
                        end
    with_app(files.map { |f| [f, "a: 1"] }) do |app|
      with_store(app) { |s| s.put("st/x", "1") }
      answer = ->(path) { path == "#{app}/#{files[1]}" ? [:stale, "mtime changed"] : [:hit, nil] }
      with_answers(load_path: { status: :miss, reason: "no index for this $LOAD_PATH" }, compile: answer) do
        run = cli("check", *only, app: app)
        assert_equal 2, run.status, run.out + run.err
        assert_includes run.out, ISEQ ? "load_path:  miss (no index for this $LOAD_PATH)" : "load_path:  off ("
        assert_includes run.out, format("%-11s 2 files: 1 hit, 1 stale", "#{kind}:")
        assert_includes run.out, "  stale: #{app}/#{files[1]} (mtime changed)"
        assert_includes run.out, "verdict:    MISS"
      end
    end
  end
end

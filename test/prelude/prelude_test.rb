# frozen_string_literal: true

require "test_helper"
require "stringio"
require "loadout/cli"
require "support/compile_cache_boot"

# `loadout prelude` and its shim (lib/loadout/prelude/rubygems.rb): Ruby processes started with
# the directory on RUBYLIB against the same processes without it, in subprocesses.
class PreludeTest < Minitest::Test
  include Loadout::TestSupport::Subprocess
  include Loadout::TestSupport::CompileCacheBoot

  # What a process started with nothing of the test's environment sees of its own start (the
  # shim's constant aside: the one trace it leaves, by design).
  REPORT = <<~'RUBY'
    puts $LOADED_FEATURES, "--", $LOAD_PATH, "--", Gem.loaded_specs.keys.sort, "--"
    puts require("rubygems"), Gem.method(:try_activate).source_location.inspect
  RUBY
  SERVED = 'warn "served=#{defined?(Loadout::Prelude) ? Loadout::Prelude.served : "none"}"'
  # A start as the user's shell has it: none of the test runner's Bundler or RUBYOPT.
  CLEAN = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil, "RUBYLIB" => nil, "BUNDLER_SETUP" => nil,
            "BUNDLE_BIN_PATH" => nil }.freeze

  def cli(*argv, env:)
    out = StringIO.new
    err = StringIO.new
    status = Loadout::CLI.new(argv, out: out, err: err, env: ENV.to_h.merge(CLEAN).merge(env)).run
    [status, out.string, err.string]
  end

  # Records a prelude for an app in +app+ (no Gemfile: BUNDLE_GEMFILE names a missing one) into
  # +dir+; +env+ is how the app's processes start. Returns the CLI's output.
  def record(app, dir, env: {})
    status, out, err = cli("prelude", "--dir", dir, env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }.merge(env))
    assert_equal 0, status, "loadout prelude failed: #{out}#{err}"
    out
  end

  def start(script, env: {}, ruby_opts: [], rubylib: nil)
    out, err, status = Open3.capture3(ENV.to_h.merge(CLEAN).merge("RUBYLIB" => rubylib).merge(env), RbConfig.ruby,
                                      *ruby_opts, "-e", script, "-e", SERVED)
    assert status.success?, "child ruby failed:\n#{out}\n#{err}"
    served = err[/^served=(\w+)$/, 1]
    [out, err.sub(/^served=\w+\n/, ""), served == "none" ? nil : served.to_i]
  end

  # Yields [tmp, app, file, dir]: an old file beside an app (a stand-in for an installed gem or
  # Ruby's own lib, not under the app: the prelude leaves the app's files out) holding +source+,
  # and the prelude directory recorded for the app's processes, which load the file with -r: it
  # is in the image like RubyGems' own files.
  def with_installed(name, source)
    with_files([["app/"]]) do |tmp|
      app = File.join(tmp, "app")
      path = File.join(tmp, "site", name)
      FileUtils.mkdir_p(File.dirname(path))
      File.write(path, source)
      File.utime(Time.now - 3600, Time.now - 3600, path)
      dir = File.join(app, "tmp/prelude")
      record(app, dir, env: { "RUBYOPT" => "-r#{path}" })
      yield tmp, app, path, dir
    end
  end

  def test_a_start_with_the_prelude_is_the_start_without_it
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_files do |app|
      dir = File.join(app, "tmp/prelude")
      output = record(app, dir)
      assert_match(/loadout prelude: \d+ files that Ruby's prelude \(no Gemfile/, output)
      assert_includes output, "ENV RUBYLIB=#{dir}"
      plain_out, plain_err, none = start(REPORT)
      out, err, served = start(REPORT, rubylib: dir)
      assert_nil none
      assert_equal plain_out, out # features (the shim's own entry gone), $LOAD_PATH (its dir gone), specs
      assert_equal plain_err, err
      assert_operator served, :>=, 20, "RubyGems' own files were not served"
      # RUBYLIB naming the directory through a link (Ruby names the shim by its real path).
      link = File.join(app, "prelude-link")
      File.symlink(dir, link)
      assert_equal [plain_out, plain_err, served], start(REPORT, rubylib: link)
    end
  end

  def test_bundler_setup_is_recorded_and_served_as_it_loads
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    gemfile = File.expand_path("../../Gemfile", __dir__)
    with_files do |app|
      dir = File.join(app, "prelude")
      status, out, err = cli("prelude", "--dir", dir, env: { "BUNDLE_GEMFILE" => gemfile })
      assert_equal 0, status, err
      assert_includes out, "Ruby's prelude and bundler/setup loaded"
      env = { "BUNDLE_GEMFILE" => gemfile }
      script = "#{REPORT}\nputs Bundler.load.specs.map(&:full_name).sort"
      plain_out, plain_err, = start(script, env: env, ruby_opts: ["-rbundler/setup"])
      bundled_out, bundled_err, served = start(script, env: env, ruby_opts: ["-rbundler/setup"], rubylib: dir)
      unbundled_out, _, without_bundler = start(REPORT, rubylib: dir)
      assert_equal plain_out, bundled_out
      assert_equal plain_err, bundled_err
      # (Bundler may run from the bundle, e.g. vendor/bundle inside the app: served all the same.)
      added = [bundled_out, unbundled_out].map { |out| out.split("--\n").first.lines.grep(/\.rb$/).size }.reduce(:-)
      assert_operator served - without_bundler, :>=, added * 0.9, "Bundler's files were not served"
    end
  end

  def test_a_changed_file_is_compiled_by_ruby_and_labels_are_rubys
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    source = <<~RUBY
      WIDGET = [__FILE__, caller_locations(0, 1)[0].label, [1].map { caller_locations(0, 1)[0].label }, "v1"]
    RUBY
    with_installed("widget.rb", source) do |tmp, _app, widget, dir|
      script = "p WIDGET"
      plain, = start(script, ruby_opts: ["-r#{widget}"])
      out, _, served = start(script, ruby_opts: ["-r#{widget}"], rubylib: dir)
      _, _, served_without = start("nil", rubylib: dir)
      assert_equal plain, out
      assert_includes out, '"<top (required)>", ["block in <top (required)>"]'
      assert_equal served_without + 1, served, "the widget was not served"

      File.write(widget, source.sub("v1", "v2")) # same size, another mtime
      File.utime(Time.now - 7200, Time.now - 7200, widget)
      out, _, stale = start(script, ruby_opts: ["-r#{widget}"], rubylib: dir)
      assert_includes out, '"v2"'
      assert_equal served_without, stale
      # LOADOUT_STATS says so (the widget loads before loadout's setup here).
      _, err, = start(script, ruby_opts: ["-r#{widget}", "-I", LIB, "-rloadout/setup"], rubylib: dir,
                              env: { "LOADOUT_STATS" => "1", "LOADOUT_CACHE_DIR" => File.join(tmp, "cache") })
      assert_match(/^  prelude: +served=#{served_without} stale=1$/, err)
    end
  end

  # On a miss loadout's compile cache lets Ruby compile and stores that compile (Capture); a file
  # the prelude served instead would be compiled a second time to be stored.
  def test_a_compile_cache_set_up_since_has_what_it_passes_on_compiled_by_ruby
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_installed("widget.rb", "WIDGET = 1\n") do |tmp, app, widget, dir|
      store = File.join(app, "store")
      boot = lambda do
        cc_boot(store: store, roots: [app, tmp], body: "require #{widget.dump}; p WIDGET; warn Loadout::Prelude.served",
                env: CLEAN.merge("RUBYLIB" => dir))
      end
      first = boot.call
      second = boot.call
      _, _, before_setup = start("nil", ruby_opts: ["-r#{widget}"], rubylib: dir)
      _, _, without = start("nil", rubylib: dir)
      assert_equal without + 1, before_setup
      assert_equal [without.to_s] * 2, [first.stderr.to_i.to_s, second.stderr.to_i.to_s],
                   "the prelude served a file the compile cache had passed on"
      assert_equal [1, 0], [first.count(:iseq, :misses), first.count(:iseq, :hits)]
      assert_equal [0, 1], [second.count(:iseq, :misses), second.count(:iseq, :hits)]
      assert_equal "1\n", second.stdout
    end
  end

  # `loadout check` says what a process of this Ruby gets from the prelude on RUBYLIB, and what
  # it says is what the next process does (Prelude.stats).
  def test_check_tells_whether_the_next_process_is_served
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_installed("widget.rb", "WIDGET = 1\n") do |_tmp, app, widget, dir|
      FileUtils.mkdir_p(File.join(app, "tmp/cache/loadout"))
      Loadout::Store.open(File.join(app, "tmp/cache/loadout/store")) { |s| s.put("x", "y") }
      check = lambda do
        _, out, = cli("check", env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile"), "RUBYLIB" => "/x:#{dir}" })
        out[/^prelude: .*$/]
      end
      _, _, served = start("nil", ruby_opts: ["-r#{widget}"], rubylib: dir)
      assert_equal "prelude:    #{dir} (on RUBYLIB): #{served} files for Ruby #{RUBY_VERSION}, each as it was compiled",
                   check.call

      File.utime(Time.now - 60, Time.now - 60, widget)
      assert_equal "prelude:    #{dir} (on RUBYLIB): 1 of #{served} files changed since `loadout prelude` (Ruby " \
                   "compiles them): run it again", check.call
      assert_equal served - 1, start("nil", ruby_opts: ["-r#{widget}"], rubylib: dir)[2]

      image = Dir[File.join(dir, "*.image")].first
      File.chmod(0o666, image) # (the shim refuses it, with its warning)
      assert_match(/its image is not used \(another user than this one and root can write it/, check.call)
      assert_equal 0, start("nil", rubylib: dir)[2]

      File.unlink(image)
      assert_match(/no image for Ruby #{Regexp.escape(RUBY_VERSION)}/, check.call)
      assert_equal 0, start("nil", rubylib: dir)[2]
    end
  end

  def test_warnings_under_w_are_rubys_and_other_compile_options_turn_it_off
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_installed("noisy.rb", "def noisy\n  unused = 1\nend\nNOISY = 'a'\n") do |_tmp, _app, widget, dir|
      script = "p NOISY.frozen?"
      _, plain_err, = start(script, ruby_opts: ["-w", "-r#{widget}"])
      _, err, = start(script, ruby_opts: ["-w", "-r#{widget}"], rubylib: dir)
      assert_match(/assigned but unused variable - unused/, plain_err)
      assert_equal plain_err, err
      _, _, quiet = start(script, ruby_opts: ["-r#{widget}"], rubylib: dir)
      _, _, loud = start(script, ruby_opts: ["-w", "-r#{widget}"], rubylib: dir)
      assert_equal start("nil", rubylib: dir)[2] + 1, quiet, "the file was not served"
      assert_equal start("nil", ruby_opts: ["-w"], rubylib: dir)[2], loud,
                   "under -w, a file whose compile warns is Ruby's to compile"

      plain, = start(script, ruby_opts: ["--enable=frozen-string-literal", "-r#{widget}"])
      out, _, served = start(script, ruby_opts: ["--enable=frozen-string-literal", "-r#{widget}"], rubylib: dir)
      assert_equal "true\n", plain
      assert_equal plain, out
      assert_equal 0, served
    end
  end

  def test_an_image_others_can_write_or_a_corrupt_one_is_not_run
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_files do |app|
      dir = File.join(app, "tmp/prelude")
      record(app, dir)
      plain, = start(REPORT)
      image = Dir[File.join(dir, "*.image")].first
      File.chmod(0o666, image)
      out, err, served = start(REPORT, rubylib: dir)
      assert_equal plain, out
      assert_equal 0, served
      assert_equal 1, err.lines.size, err
      assert_match(/\Aloadout prelude: .*belongs to or can be written by another user.*Ruby compiles RubyGems'/, err)

      File.chmod(0o644, image)
      if Process.euid.zero? # (another user's image: only root can make one here)
        File.chown(65_534, nil, image)
        out, err, served = start(REPORT, rubylib: dir)
        assert_equal [plain, 0], [out, served]
        assert_match(/belongs to or can be written by another user/, err)
        File.chown(0, nil, image)
      end
      File.write(image, File.binread(image)[0, 1000])
      out, err, served = start(REPORT, rubylib: dir)
      assert_equal plain, out
      assert_equal 0, served
      assert_match(/\Aloadout prelude: .* could not be read/, err)
      assert_equal 1, err.lines.size, err

      File.chmod(0o777, dir)
      status, _, err = cli("prelude", "--dir", dir, env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") })
      assert_equal 1, status
      assert_match(/prelude: #{Regexp.escape(dir)} is writable by other users.*fix: chmod go-w/, err)
    end
  end

  # Any Ruby with the directory on RUBYLIB and no image of its own there (another Ruby's, or JRuby,
  # which has no instruction sequences to serve): RubyGems loads as without it.
  def test_a_directory_with_no_image_for_this_ruby_only_loads_rubygems
    with_files([["prelude/"]]) do |tmp|
      dir = File.join(tmp, "prelude")
      FileUtils.cp(File.join(LIB, "loadout/prelude/rubygems.rb"), dir)
      script = "#{REPORT}\nputs Gem::VERSION"
      plain, plain_err, = start(script)
      out, err, served = start(script, rubylib: dir)
      assert_equal 0, served
      assert_equal plain_err, err
      if RUBY_ENGINE == "ruby"
        assert_equal plain, out
      else # (no load_iseq to hook: the shim's own entry stays in $LOADED_FEATURES, nothing else differs)
        assert_equal [File.join(dir, "rubygems.rb")], out.lines(chomp: true) - plain.lines(chomp: true)
        assert_equal plain.lines.size + 1, out.lines.size
      end
    end
  end

  def test_env_prints_the_rubylib_line_with_the_dir_first
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_files do |app|
      dir = File.join(app, "p")
      status, out, = cli("prelude", "--dir", dir, "--env",
                         env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile"), "RUBYLIB" => "/x:#{dir}" })
      assert_equal 0, status
      assert_equal "RUBYLIB=#{dir}:/x\n", out
      assert File.file?(File.join(dir, "rubygems.rb"))
      # Under `bundle exec` (this test's own process, if so), not the lib dir it put there itself.
      bundler = File.dirname($LOADED_FEATURES.find { |f| f.end_with?("/bundler.rb") })
      _, out, = cli("prelude", "--dir", dir, "--env", env: { "BUNDLE_GEMFILE" => File.join(app, "Gemfile"),
                                                             "RUBYLIB" => "#{bundler}:/x", "BUNDLE_BIN_PATH" => "b" })
      assert_equal "RUBYLIB=#{dir}:/x\n", out
    end
  end
end

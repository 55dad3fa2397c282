# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "open3"
require "rbconfig"

# The C extension builds warning-free with gcc and clang, and a compile that fails never fails
# `gem install`: the gem installs and runs on its Ruby twins. bin/test runs this file once (it
# does not depend on the backend under test). CRuby only: elsewhere there is nothing to build.
class ExtensionBuildTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  EXT = File.join(ROOT, "ext/loadout")

  def run_cmd(*cmd, env: {}, chdir:)
    out, status = Open3.capture2e(env, *cmd, chdir: chdir)
    [out, status]
  end

  # Configures a copy of ext/loadout with warnings as errors; yields the build dir.
  def with_configured_ext
    with_files do |dir|
      FileUtils.cp_r(EXT, dir)
      src = File.join(dir, "loadout")
      build = File.join(dir, "build")
      Dir.mkdir(build)
      out, status = run_cmd(RbConfig.ruby, File.join(src, "extconf.rb"),
                            env: { "LOADOUT_PEDANTIC" => "1" }, chdir: build)
      assert status.success?, out
      yield build, src
    end
  end

  %w[gcc clang].each do |cc|
    test "#{cc} builds the extension with -Wall -Wextra -Werror and the result loads" do
      assert system("#{cc} --version", out: File::NULL, err: File::NULL),
             "#{cc} is not installed (bin/setup-deps installs it)"
      with_configured_ext do |build, _|
        # Ruby's own warning flags are its compiler's (a Ruby built with gcc, such as the 4.0 built
        # from source, passes -Wduplicated-cond and -Wsuggest-attribute=format): clang is told to
        # ignore the ones it does not know, and keeps every one it does.
        flags = cc == "clang" ? ["warnflags=#{RbConfig::CONFIG["warnflags"]} -Wno-unknown-warning-option"] : []
        out, status = run_cmd("make", "-s", "CC=#{cc}", *flags, chdir: build)
        assert status.success?, "#{cc} build failed:\n#{out}"
        assert_empty out.lines.grep(/warning/i), out
        so = File.join(build, "loadout_ext.#{RbConfig::CONFIG["DLEXT"]}")
        script = "require #{so.dump}; print Loadout::Native.xxh64(%q(loadout), 0)"
        loaded = run_ruby!(script)
        assert_match(/\A\d+\z/, loaded.stdout)
      end
    end
  end

  test "with -Werror a compile error fails the build (the strict path really is strict)" do
    with_configured_ext do |build, src|
      File.open(File.join(src, "scan.c"), "a") { |f| f.puts "#error injected by the test" }
      out, status = run_cmd("make", "-s", chdir: build)
      refute status.success?, out
      assert_includes out, "injected by the test"
    end
  end

  # Builds the gem from a copy of the checkout changed by +break_it+, installs it into a fresh
  # GEM_HOME with +env+ and returns [install output, status, gem home].
  def install_broken_gem(dir, env: {})
    copy = File.join(dir, "src")
    FileUtils.mkdir_p(copy)
    %w[lib ext exe loadout.gemspec README.md CHANGELOG.md LICENSE.txt docs].each do |f|
      FileUtils.cp_r(File.join(ROOT, f), copy) if File.exist?(File.join(ROOT, f))
    end
    Dir.glob(File.join(copy, "lib/loadout/*.{so,bundle,tmp}")).each { |f| File.delete(f) }
    yield copy
    out, status = run_cmd("gem", "build", "loadout.gemspec", chdir: copy)
    assert status.success?, out
    gem = Dir.glob(File.join(copy, "loadout-*.gem")).first
    home = File.join(dir, "gems")
    clean = { "GEM_HOME" => home, "GEM_PATH" => home, "BUNDLE_GEMFILE" => nil, "RUBYOPT" => nil, "RUBYLIB" => nil }
    out, status = run_cmd("gem", "install", "--local", "--no-document", "--install-dir", home, gem,
                          env: clean.merge(env), chdir: dir)
    [out, status, clean]
  end

  def assert_runs_on_twins(env)
    script = <<~RUBY
      require "loadout"
      Loadout::Store.open(File.join(Dir.pwd, "s.store")) { |s| s.put("k", "v"); print Loadout::BACKEND, " ", s.get("k") }
    RUBY
    # (LOADOUT_PURE cleared: the pure-Ruby pass of the suite sets it, which asks for the twins quietly.)
    child_env = env.merge("LOADOUT_QUIET_BACKEND" => nil, "LOADOUT_PURE" => nil)
    out, err, status = Open3.capture3(child_env, RbConfig.ruby, "-e", script, chdir: File.dirname(env["GEM_HOME"]))
    assert status.success?, err
    assert_equal "ruby v", out
    assert_includes err, "native extension unavailable"
  end

  test "gem install succeeds when the extension does not compile, and the gem runs on the twins" do
    with_files do |dir|
      out, status, env = install_broken_gem(dir) do |copy|
        File.open(File.join(copy, "ext/loadout/scan.c"), "a") { |f| f.puts "#error injected by the test" }
      end
      assert status.success?, "gem install failed:\n#{out}"
      assert_runs_on_twins(env)
    end
  end

  test "gem install succeeds when the compiler itself fails (CC=false), and the gem runs on the twins" do
    with_files do |dir|
      # Make variables in MAKEFLAGS override the Makefile's CC, as a broken toolchain would.
      out, status, env = install_broken_gem(dir, env: { "MAKEFLAGS" => "CC=false" }) { nil }
      assert status.success?, "gem install failed:\n#{out}"
      assert_runs_on_twins(env)
    end
  end
end

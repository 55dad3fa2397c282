# frozen_string_literal: true

require "test_helper"
require_relative "backdate"
require "support/fake_store"

# Counts syscalls with strace between two marker stats the child makes, so Ruby's own startup
# does not count. Counts are stable; no wall-clock here.
class LoadPathSyscallsTest < Minitest::Test
  include Loadout::TestSupport::Backdate
  TEST_DIR = File.expand_path("..", __dir__)
  FILE_CALLS = "getdents64,openat,open,stat,lstat,newfstatat,statx,access,readlink"

  def setup
    @strace = ENV.fetch("PATH", "").split(":").map { |d| "#{d}/strace" }.find { |f| File.executable?(f) }
    skip "strace is not installed" unless @strace
    _, _, status = Open3.capture3(@strace, "-f", "-e", "trace=none", "-o", "/dev/null", "true")
    skip "strace cannot trace here (ptrace not permitted)" unless status.success?
  end

  # Runs +script+ under strace; returns the traced lines between the markers.
  def traced(script, env:, dir:)
    log = "#{dir}/strace.log"
    file = "#{dir}/child.rb"
    File.write(file, script)
    out, status = Open3.capture2e(env, @strace, "-f", "-qq", "-e", "trace=#{FILE_CALLS}", "-o", log,
                                  RbConfig.ruby, "-I", Loadout::TestSupport::Subprocess::LIB, "-I", TEST_DIR, file)
    assert status.success?, out
    lines = File.readlines(log)
    first = lines.index { |l| l.include?("/loadout-mark-begin") } or flunk("no begin marker")
    last = lines.rindex { |l| l.include?("/loadout-mark-end") } or flunk("no end marker")
    lines[(first + 1)...last]
  end

  def gem_tree
    (0...20).map { |g| ["gems/g#{g}-1.0/lib/g#{g}/deep/f#{g}.rb", "nil"] } +
      [["app/lib/a/b/app.rb", "nil"], ["app/lib/empty/"]]
  end

  def child(home, body)
    <<~RUBY
      require "loadout"
      require "loadout/scan"
      require "support/fake_store"
      Loadout::LoadPath.__load_parts # loading loadout's own files is not what is measured
      # The repo's lib/ and test/ change while other work goes on; they are not under test.
      $LOAD_PATH.reject! { |p| p == #{Loadout::TestSupport::Subprocess::LIB.dump} || p == #{TEST_DIR.dump} }
      $LOAD_PATH.unshift("#{home}/app/lib", *(0...20).map { |g| "#{home}/gems/g\#{g}-1.0/lib" })
      store = Loadout::TestSupport::FakeStore.open("#{home}/store.bin")
      Loadout::LoadPath.install!(store: store) if ENV["MODE"] == "cold"
      File.exist?("/loadout-mark-begin")
      #{body}
      File.exist?("/loadout-mark-end")
    RUBY
  end

  test "a warm boot lists no directory and stats only the volatile item's dirs" do
    with_files(gem_tree) do |home|
      backdate(home)
      env = { "GEM_HOME" => home, "GEM_PATH" => home, "RUBYOPT" => nil, "RUBYLIB" => nil, "BUNDLE_GEMFILE" => nil }
      body = 'Loadout::LoadPath.install!(store: store); raise "not restored" unless Loadout::LoadPath.stats[:restored]'
      run_ruby!(child(home, "nil"), env: env.merge("MODE" => "cold"), ruby_opts: ["-I", TEST_DIR])
      lines = traced(child(home, body), env: env, dir: home)
      assert_equal [], lines.grep(/getdents/), "warm restore must not list directories"
      # The stable root's realpath, once (it vouches for every gem dir under it), nothing else.
      gem_calls = lines.grep(%r{#{Regexp.escape(home)}/gems})
      assert_equal ["#{home}/gems"], gem_calls.map { |l| l[/"([^"]*)"/, 1] }.uniq, "stable entries must not be touched"
      app_stats = lines.grep(%r{#{Regexp.escape(home)}/app/lib})
      # app/lib, a, a/b, empty: every directory of the volatile entry (one stat each), and the
      # entry's realpath (Ruby 3.1 records features under it), nothing else of it.
      touched = app_stats.map { |l| l[/"([^"]*)"/, 1].delete_prefix("#{home}/app/lib") }
      assert_equal ["", "/a", "/a/b", "/empty"], touched.uniq.sort, app_stats.join
      stats = app_stats.grep(/stat/).map { |l| l[/"([^"]*)"/, 1].delete_prefix("#{home}/app/lib") }
      assert_equal ["/a", "/a/b", "/empty"], stats.reject(&:empty?).sort, app_stats.join
      # app/lib once, and once more where File.realpath stats what it readlinks (Ruby 3.1 to 3.4;
      # 4.0's realpath does not).
      assert_includes 1..(1 + app_stats.grep(/readlink/).size), stats.count(""), app_stats.join
    end
  end

  test "a warm require opens only the file itself, and a miss stats only the app dir that could hold it" do
    with_files(gem_tree) do |home|
      backdate(home)
      env = { "GEM_HOME" => home, "GEM_PATH" => home, "RUBYOPT" => nil, "RUBYLIB" => nil, "BUNDLE_GEMFILE" => nil }
      run_ruby!(child(home, "nil"), env: env.merge("MODE" => "cold"), ruby_opts: ["-I", TEST_DIR])
      body = <<~'RUBY'
        Loadout::LoadPath.install!(store: store)
        # Ruby 3.1 realpaths every $LOAD_PATH item on the first require after a change to it
        # (its own expanded load path cache, with or without loadout): pay that first.
        require "g0/deep/f0"
        File.exist?("/loadout-mark-require")
        require "g19/deep/f19"
        File.exist?("/loadout-mark-miss")
        begin
          Kernel.require "no_such_feature_anywhere"
        rescue LoadError
        end
      RUBY
      lines = traced(child(home, body), env: env, dir: home)
      at_require = lines.index { |l| l.include?("/loadout-mark-require") }
      at_miss = lines.index { |l| l.include?("/loadout-mark-miss") }
      require_calls = lines[(at_require + 1)...at_miss]
      miss_calls = lines[(at_miss + 1)..]
      target = "#{home}/gems/g19-1.0/lib/g19/deep/f19.rb"
      # Only Ruby's own work on the resolved file: open + fstat, realpath (readlink of each
      # ancestor), the load itself. No probe of any other entry.
      stray = require_calls.reject do |l|
        path = l[/"([^"]*)"/, 1]
        path.nil? || path.empty? || target.start_with?(path)
      end
      assert_equal [], stray, "warm require touched other paths"
      assert_operator require_calls.size, :<=, 30, require_calls.join
      assert_equal [], require_calls.grep(/ENOENT/), "no failed probes:\n#{require_calls.join}"
      # A miss re-checks each app dir (volatile entry) on the way to the file: one stat each of
      # the deepest directory it recorded (here app/lib itself, and Ruby's vendor dir, which
      # dpkg may change), never a gem dir, never a listing.
      touched = miss_calls.map { |l| l[/"([^"]*)"/, 1] }
      assert_equal [], miss_calls.grep(/getdents|openat|ENOENT/), miss_calls.join
      assert_equal [], touched.grep(%r{#{Regexp.escape(home)}/gems}), miss_calls.join
      assert_includes touched, "#{home}/app/lib"
      assert_equal touched.uniq.size, miss_calls.size, "one stat per app dir:\n#{miss_calls.join}"
    end
  end

  # Ruby's own require of a loaded extension ("strscan", ext-less) searches every $LOAD_PATH
  # entry for strscan.rb before it says "already loaded": one failed open per entry, every time.
  # The index answers that search: no probe at all, same answer (false).
  test "requiring a loaded extension again probes nothing" do
    # The twin hands every maybe-loaded feature to Ruby (see ruby_hook.rb), which searches.
    skip "the native hook's answer (the Ruby twin lets Ruby search)" if Loadout::BACKEND != :native
    with_files(gem_tree) do |home|
      backdate(home)
      env = { "GEM_HOME" => home, "GEM_PATH" => home, "RUBYOPT" => nil, "RUBYLIB" => nil, "BUNDLE_GEMFILE" => nil }
      run_ruby!(child(home, "nil"), env: env.merge("MODE" => "cold"), ruby_opts: ["-I", TEST_DIR])
      body = <<~'RUBY'
        require "strscan"
        Loadout::LoadPath.install!(store: store)
        require "g0/deep/f0" # (Ruby 3.1 realpaths every entry once after a change: paid here)
        File.exist?("/loadout-mark-again")
        raise "strscan: expected false" unless require("strscan") == false
      RUBY
      lines = traced(child(home, body), env: env, dir: home)
      at = lines.index { |l| l.include?("/loadout-mark-again") }
      again = lines[(at + 1)..]
      assert_equal [], again.grep(/strscan/), "probes for a loaded extension:\n#{again.join}"
    end
  end
end

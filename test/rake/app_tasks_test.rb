# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# `require "loadout/rake_tasks"`: loadout:precompile and loadout:clean, and the cache dir in
# CLOBBER. (`require "loadout/rake"` alone adds nothing: see the -T/-P scenarios of
# differential_test.rb and test/rake/stock_suite.rb.)
class RakeAppTasksTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject
  RAKE_LIB = P.rake_libs.first

  # Runs rake with the accelerator from RUBYOPT, and the app tasks from -r (or from the Rakefile
  # when it requires them itself).
  def rake(dir, *args, env: {}, rakefile: "")
    File.write(File.join(dir, "Rakefile"), rakefile)
    opts = rakefile.include?("loadout/rake_tasks") ? [] : ["-rloadout/rake_tasks"]
    P.run_rake(dir, args, mode: :loadout, rake_lib: RAKE_LIB, env: env, ruby_opts: opts)
  end

  test "loadout:precompile fills the cache dir of the directory rake runs in" do
    with_files([["lib/app/thing.rb", "module Thing; end\n"]]) do |dir|
      # Without this bundle's Gemfile: the app is the directory rake runs in.
      unbundled = ENV.keys.grep(/\ABUNDLE(R)?_/).to_h { |k| [k, nil] }
      out, err, status = rake(dir, "loadout:precompile", env: unbundled)
      assert_equal 0, status, err
      assert_match(/^loadout precompile: [1-9]\d* files/, out)
      assert File.size?(File.join(dir, "tmp/cache/loadout/store")), "no store in #{dir}: #{out}"
    end
  end

  test "loadout:clean removes tmp/cache/loadout under the directory rake runs in" do
    with_files([["tmp/cache/loadout/store.log", "x"], ["tmp/cache/keep.txt", "keep"]]) do |dir|
      _out, err, status = rake(dir, "loadout:clean")
      assert_equal 0, status, err
      refute File.exist?(File.join(dir, "tmp/cache/loadout"))
      assert File.exist?(File.join(dir, "tmp/cache/keep.txt")), "only the cache dir goes"
    end
  end

  test "loadout:clean removes $LOADOUT_CACHE_DIR, relative to the directory rake runs in" do
    with_files([["elsewhere/cache/store.log", "x"], ["tmp/cache/loadout/store.log", "x"]]) do |dir|
      _out, err, status = rake(dir, "loadout:clean", env: { "LOADOUT_CACHE_DIR" => "elsewhere/cache" })
      assert_equal 0, status, err
      refute File.exist?(File.join(dir, "elsewhere/cache"))
      assert File.exist?(File.join(dir, "tmp/cache/loadout/store.log"))
    end
  end

  test "loadout:clean succeeds when there is nothing to remove" do
    with_files do |dir|
      _out, err, status = rake(dir, "loadout:clean")
      assert_equal 0, status, err
    end
  end

  test "both tasks are listed with descriptions, also when loaded by the Rakefile" do
    with_files do |dir|
      [{}, { "LOADOUT_RAKE_IN_RAKEFILE" => "1" }].each do |env|
        rakefile = env.empty? ? "" : %(require "loadout/rake"\nrequire "loadout/rake_tasks"\n)
        out, err, status = rake(dir, "-T", env: env, rakefile: rakefile)
        assert_equal 0, status, err
        assert_match(/^rake loadout:clean\s+# Remove loadout's cache directory/, out)
        assert_match(/^rake loadout:precompile\s+# Fill loadout's caches for this app/, out)
      end
    end
  end

  test "descriptions never leak onto the Rakefile's first task" do
    with_files do |dir|
      out, _err, status = rake(dir, "-T", rakefile: "task :first\ndesc 'Second'\ntask :second\n")
      assert_equal 0, status
      refute_match(/rake first/, out)
      assert_match(/rake second\s+# Second/, out)
    end
  end

  test "the cache dir joins CLOBBER when the Rakefile uses rake/clean, before or after loadout/rake_tasks" do
    with_files([["tmp/cache/loadout/store.log", "x"], ["keep.txt", "keep"]]) do |dir|
      [%(require "rake/clean"\nrequire "loadout/rake_tasks"\n),
       %(require "loadout/rake_tasks"\nrequire "rake/clean"\n)].each do |rf|
        FileUtils.mkdir_p(File.join(dir, "tmp/cache/loadout"))
        _out, err, status = rake(dir, "clobber", env: { "LOADOUT_RAKE_IN_RAKEFILE" => "1" }, rakefile: rf)
        assert_equal 0, status, err
        refute File.exist?(File.join(dir, "tmp/cache/loadout")), rf
        assert File.exist?(File.join(dir, "keep.txt"))
      end
    end
  end

  test "loadout/rake_tasks does not load rake/clean (no clean or clobber task appears)" do
    with_files do |dir|
      out, _err, status = rake(dir, "-P")
      assert_equal 0, status
      refute_match(/^rake (clean|clobber)$/, out)
      assert_match(/^rake loadout:precompile$/, out)
    end
  end

  test "loadout/rake alone adds no task, whether from RUBYOPT or from the Rakefile" do
    with_files do |dir|
      [{}, { "LOADOUT_RAKE_IN_RAKEFILE" => "1" }].each do |env|
        File.write(File.join(dir, "Rakefile"), %(#{'require "loadout/rake"' unless env.empty?}\ntask :mine\n))
        out, err, status = P.run_rake(dir, ["-P"], mode: :loadout, rake_lib: RAKE_LIB, env: env)
        assert_equal 0, status, err
        assert_equal "rake mine\n", out, env.inspect
        assert_empty err
      end
    end
  end
end

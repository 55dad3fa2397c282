# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# loadout:precompile and loadout:clean, and the cache dir in CLOBBER.
class RakeAppTasksTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject
  RAKE_LIB = P.rake_libs.first

  def rake(dir, *args, env: {}, rakefile: "")
    File.write(File.join(dir, "Rakefile"), rakefile)
    P.run_rake(dir, args, mode: :loadout, rake_lib: RAKE_LIB, env: env)
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
        rakefile = env.empty? ? "" : %(require "loadout/rake"\n)
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

  test "the cache dir joins CLOBBER when the Rakefile uses rake/clean, before or after loadout/rake" do
    with_files([["tmp/cache/loadout/store.log", "x"], ["keep.txt", "keep"]]) do |dir|
      [%(require "rake/clean"\nrequire "loadout/rake"\n), %(require "loadout/rake"\nrequire "rake/clean"\n)].each do |rf|
        FileUtils.mkdir_p(File.join(dir, "tmp/cache/loadout"))
        _out, err, status = rake(dir, "clobber", env: { "LOADOUT_RAKE_IN_RAKEFILE" => "1" }, rakefile: rf)
        assert_equal 0, status, err
        refute File.exist?(File.join(dir, "tmp/cache/loadout")), rf
        assert File.exist?(File.join(dir, "keep.txt"))
      end
    end
  end

  test "loadout/rake does not load rake/clean (no clean or clobber task appears)" do
    with_files do |dir|
      out, _err, status = rake(dir, "-P")
      assert_equal 0, status
      refute_match(/^rake (clean|clobber)$/, out)
      assert_match(/^rake loadout:precompile$/, out)
    end
  end
end

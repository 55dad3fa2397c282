# frozen_string_literal: true

require "test_helper"
require "support/store_crash"

# kill -9 at random moments (research STORE.md T1/T2): >= 200 trials per backend in the suite,
# LOADOUT_STRESS_TRIALS (or `rake stress`) for more.
class StoreCrashTest < Minitest::Test
  TRIALS = Integer(ENV.fetch("LOADOUT_STRESS_TRIALS", "100"))

  test "kill -9 while appending: every acknowledged record survives exactly once" do
    with_files do |dir|
      report = Loadout::TestSupport::StoreCrash.new(dir, mode: :append, trials: TRIALS + 20).run
      puts "\nappend: #{report}" if ENV["LOADOUT_STRESS_TRIALS"]
      assert report.ok?, report.to_s
      assert_operator report.acked, :>=, TRIALS, "the harness must not pass vacuously: #{report}"
    end
  end

  test "kill -9 while two writers append and one compacts" do
    with_files do |dir|
      report = Loadout::TestSupport::StoreCrash.new(dir, mode: :compact, trials: TRIALS - 20, writers: 2,
                                                         per_file: 5).run
      puts "\ncompact: #{report}" if ENV["LOADOUT_STRESS_TRIALS"]
      assert report.ok?, report.to_s
      assert_operator report.acked, :>=, TRIALS, "the harness must not pass vacuously: #{report}"
    end
  end

  test "the checker catches a lost record (negative control)" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      Loadout::Store.open(path) { |s| s.put("t0w0-0", Loadout::TestSupport::StoreCrash.value_for("t0w0-0")) }
      File.truncate(path, File.size(path) - 1)
      harness = Loadout::TestSupport::StoreCrash.new(dir, mode: :append, trials: 0)
      harness.send(:verify, path, [["t0w0-", ["0"]]], 0)
      report = harness.instance_variable_get(:@report)
      assert_equal 1, report.lost
      refute report.ok?
    end
  end
end

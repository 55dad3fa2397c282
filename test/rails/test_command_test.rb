# frozen_string_literal: true

require "test_helper"
require_relative "support/rails_app"

# `bin/rails test` on the generated app's scaffold tests (controller tests in two forked workers,
# fixtures, the test database) gives the same results with loadout, cold and warm, as without it.
class RailsTestCommandTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  # The summary, the parallel-run banner and the name of any failed test: the rest of the output
  # holds timings.
  RESULTS = lambda do |stdout|
    stdout.lines.grep(/\A(\d+ runs, |Running \d+ tests |\w+Test#test_\w+)/).sort.join
  end

  # Each run starts from the databases the app had before the first: a run leaves the parallel
  # workers' databases (storage/test.sqlite3-0, -1) behind, and with them the next run's parent
  # keeps a writable connection open when it forks its workers, which sqlite3 2.x (the Ruby >= 3.4
  # lock) reports in each worker. Without the reset, plain ran first on a fresh copy (no warning)
  # and the loadout runs second and third (two each): a difference of run order, not of loadout.
  test "scaffold tests: the same results with and without loadout, all passing" do
    with_rails_app do |app|
      storage = File.join(app, "storage")
      pristine = "#{storage}.pristine"
      FileUtils.cp_r(storage, pristine)
      runs = assert_same_behaviour(stdout: RESULTS) do |mode|
        FileUtils.rm_rf(storage)
        FileUtils.cp_r(pristine, storage)
        run_rails(app, mode, "bin/rails", "test", "--seed", "1")
      end
      summary = runs[:plain].first.stdout[/^(\d+) runs, \d+ assertions, 0 failures, 0 errors, 0 skips$/]
      assert summary, "the scaffold tests did not all pass without loadout:\n#{runs[:plain].first.stdout}"
      assert_operator Regexp.last_match(1).to_i, :>=, RailsAppGenerator::SCAFFOLDS.size * 7
    end
  end
end

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

  # sqlite3 2.x (the Ruby >= 3.4 lock) warns in a forked worker for each writable connection the
  # parent still had: Rails 7.2's schema check before the run leaves one unreferenced but open
  # until the GC collects it, so whether the two workers warn depends on when the parent last
  # collected. Seen in plain runs too (the same app, no loadout: 0 warnings in one run, 2 in the
  # next), so the line says nothing about loadout; everything else on stderr is compared.
  FORK_SAFETY = /^.*sqlite3\/fork_safety\.rb:\d+: warning: Writable sqlite database connection\(s\) were inherited .*\n/
  STDERR = ->(stderr) { stderr.gsub(FORK_SAFETY, "") }

  test "scaffold tests: the same results with and without loadout, all passing" do
    with_rails_app do |app|
      runs = assert_same_behaviour(stdout: RESULTS, stderr: STDERR) do |mode|
        run_rails(app, mode, "bin/rails", "test", "--seed", "1")
      end
      summary = runs[:plain].first.stdout[/^(\d+) runs, \d+ assertions, 0 failures, 0 errors, 0 skips$/]
      assert summary, "the scaffold tests did not all pass without loadout:\n#{runs[:plain].first.stdout}"
      assert_operator Regexp.last_match(1).to_i, :>=, RailsAppGenerator::SCAFFOLDS.size * 7
    end
  end
end

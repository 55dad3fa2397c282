# frozen_string_literal: true

require "test_helper"

# exe/loadout itself, once, in a real child: the two-line script maps run's Integer to the
# process exit status.
class ExeTest < Minitest::Test
  EXE = File.expand_path("../../exe/loadout", __dir__)

  test "exe/loadout exits with the command's status" do
    ok = run_ruby("load ARGV.shift", args: [EXE, "version"])
    assert_equal 0, ok.status.exitstatus, ok.stderr
    assert_match(/\Aloadout #{Regexp.escape(Loadout::VERSION)} /, ok.stdout)

    bad = run_ruby("load ARGV.shift", args: [EXE, "frobnicate"])
    assert_equal 1, bad.status.exitstatus
    assert_includes bad.stderr, "loadout: unknown command: frobnicate"
    assert_includes bad.stderr, "Usage: loadout COMMAND"
    assert_empty bad.stdout
  end
end

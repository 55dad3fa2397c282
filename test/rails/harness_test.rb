# frozen_string_literal: true

require "test_helper"
require_relative "support/rails_app"

# The Rails tests prove loadout right only if their comparison is deterministic (two runs of the
# same app agree) and sees every kind of difference. Checked here with loadout off in every run.
class RailsHarnessTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  INJECTED = 'require "English"; Object.const_set(:InjectedByTest, 1); puts "injected out"; warn "injected err"'

  test "two runs without loadout agree, and a run with an extra require, constant, print and warning differs" do
    with_rails_app do |app|
      probe = ["bin/rails", "runner", script("probe.rb")]
      first = run_rails(app, :plain, *probe)
      assert first.success?, first.describe
      assert_nil differences(first, run_rails(app, :plain, *probe))

      message = differences(first, run_rails(app, :plain, *probe, env: { "RAILS_PROBE_INJECT" => INJECTED }))
      refute_nil message
      assert_match(/^stdout: .*^\+"?injected out$/m, message)
      # (Ruby's own lib dir: /usr/lib/ruby/X for Debian's Rubies, /usr/local/lib/ruby/X for 4.0's.)
      english = Regexp.escape(File.join(RbConfig::CONFIG["rubylibdir"], "English.rb"))
      assert_match(/^\$LOADED_FEATURES: .*^\+"?#{english}$/m, message)
      assert_match(/^constants: .*^\+InjectedByTest$/m, message)
      assert_match(/^stderr: .*^\+"?injected err$/m, message)
      refute_match(/^exit status:/, message)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# Ruby::Box (Ruby 4.0, RUBY_BOX=1): requires go through Ruby::Box::Loader, which never calls the
# methods loadout hooks. loadout must not pretend: the load path index and the ISeq cache stay
# off with one warning saying why, and the app boots as plain Ruby boots it.
class RubyBoxTest < Minitest::Test
  include Loadout::TestSupport::App

  BOX = { "RUBY_BOX" => "1" }.freeze
  WARNING = /^loadout: Ruby::Box is enabled \(RUBY_BOX=1\): the load path index and the ISeq cache stay off/

  def boot(app, env)
    # -W:no-experimental: Ruby's own "Ruby::Box is experimental" line is not loadout's to count.
    opts = defined?(Ruby::Box) ? ["-W:no-experimental"] : []
    result = spawn_ruby(*opts, "boot.rb", env: env, chdir: app)
    assert result.success?, "boot failed (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
    result
  end

  test "under RUBY_BOX=1 the app boots as plain Ruby does, and loadout says once that it is off and why" do
    skip "Ruby::Box is Ruby 4.0's (this is #{RUBY_VERSION})" unless defined?(Ruby::Box)
    with_app do |app|
      plain = boot(app, BOX.merge("FIXTURE_WITHOUT_LOADOUT" => "1"))
      [:cold, :warm].each do |run|
        with = boot(app, BOX.merge("LOADOUT_STATS" => "1"))
        assert_equal plain.stdout.sub(/^loadout=off\n/, ""), with.stdout.sub(/^loadout=on\n/, ""), run
        assert_equal 1, with.stderr.scan(WARNING).size, "#{run}: #{with.stderr}"
        assert_match(/the YAML and JSON caches stay on/, with.stderr)
        # Nothing went through the index: the stats say it is off, with the reason.
        assert_match(/^\s*load_path:\s+off \(Ruby::Box is enabled/, with.stderr, run)
        assert_match(/^\s*iseq:\s+off \(Ruby::Box is enabled/, with.stderr, run)
        refute_match(/^\s*load_path:\s+restore_ms/, with.stderr, run)
      end
    end
  end

  test "without RUBY_BOX nothing is said about boxes and the index answers" do
    with_app do |app|
      with = boot(app, { "LOADOUT_STATS" => "1" })
      refute_match(/Ruby::Box/, with.stderr)
      assert_match(/^\s*load_path:\s+restore_ms=\S+ requires=\d+ hits=[1-9]/, with.stderr)
    end
  end
end

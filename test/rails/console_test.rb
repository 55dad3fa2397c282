# frozen_string_literal: true

require "test_helper"
require_relative "support/rails_app"

# `bin/rails console` fed from stdin (development): the same session with loadout, cold and warm,
# as without it; with LOADOUT_STATS=1 the warm boot reports load-path index and ISeq cache hits.
class RailsConsoleTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  INPUT = <<~'RUBY'
    puts "posts=#{Post.count} published=#{Post.published.map(&:title)}"
    Payments::Charge.new(500).call
    Billing::Invoice.first.label
    I18n.t("probe.greeting", locale: :fr)
    reload!
    Post.new.probe_version
    LOAD_PROBES.sort
    exit
  RUBY
  # The SQL log lines the console prints on stderr carry query times.
  NO_TIMINGS = ->(stderr) { stderr.gsub(/\(\d+\.\d+ms\)/, "(?ms)") }

  test "a console session fed from stdin matches the one without loadout; the warm boot hits the caches" do
    with_rails_app do |app|
      runs = assert_same_behaviour(stderr: NO_TIMINGS) do |mode|
        run_rails(app, mode, "bin/rails", "console", stdin: INPUT, env: { "LOADOUT_STATS" => "1" })
      end
      plain = runs[:plain].first.stdout
      assert_includes plain, "posts=2 published=[\"Hello\"]"
      assert_includes plain, "\"charged 5.00\""
      assert_includes plain, "\"INV-1 charged 12.50\""
      assert_includes plain, "\"Bonjour de la sonde\""
      assert_includes plain, "Reloading..."

      warm = runs[:warm].first.stderr
      { "load_path:" => "load-path index", "iseq:" => "ISeq cache" }.each do |line, cache|
        assert_operator stats_count(warm, line, "hits").to_i, :>, 0, "no #{cache} hits on the warm boot:\n#{warm}"
      end
    end
  end
end

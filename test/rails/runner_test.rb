# frozen_string_literal: true

require "test_helper"
require_relative "support/rails_app"

# `bin/rails runner` on the generated Rails app (support/rails_app.rb), without loadout, then with
# it cold and warm: the same output, the same $LOADED_FEATURES and the same constants once every
# Zeitwerk loader has eager loaded.
class RailsRunnerTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  test "development: runner output, features and constants match the run without loadout" do
    with_rails_app do |app|
      runs = assert_same_behaviour { |mode| run_rails(app, mode, "bin/rails", "runner", script("probe.rb")) }
      assert_sensible_probe(runs[:plain].first, env: "development")
    end
  end

  test "production (eager loading): runner output, features and constants match the run without loadout" do
    with_rails_app do |app|
      env = { "RAILS_ENV" => "production", "SECRET_KEY_BASE" => RailsAppGenerator::SECRET_KEY_BASE }
      runs = assert_same_behaviour { |mode| run_rails(app, mode, "bin/rails", "runner", script("probe.rb"), env: env) }
      assert_sensible_probe(runs[:plain].first, env: "production")
    end
  end

  test "production with `loadout prelude`'s directory on RUBYLIB: the same runner, features and constants" do
    skip "the prelude serves CRuby's instruction sequences" unless RUBY_ENGINE == "ruby"

    with_rails_app do |app|
      env = { "RAILS_ENV" => "production", "SECRET_KEY_BASE" => RailsAppGenerator::SECRET_KEY_BASE }
      dir = File.join(app, "tmp/prelude")
      out, err, status = Open3.capture3(RailsAppGenerator.clean_env(env), "bundle", "exec", "loadout", "prelude",
                                        "--dir", dir, chdir: app)
      assert status.success?, "#{out}#{err}"
      assert_includes out, "files that Ruby's prelude and bundler/setup loaded"
      prelude = { "RUBYLIB" => dir, "LOADOUT_STATS" => "1" }
      runs = assert_same_behaviour do |mode|
        run_rails(app, mode, "bin/rails", "runner", script("probe.rb"), env: env, loadout_env: prelude)
      end
      assert_sensible_probe(runs[:plain].first, env: "production")
      # Bundler's files and RubyGems' were served (more than a hundred on every Ruby in CI).
      assert_operator stats_count(runs[:warm].first.stderr, "prelude", "served"), :>, 100
    end
  end

  private

  # The plain run is the reference: prove it saw the app the generator built, so an empty or
  # broken reference cannot make the comparison pass.
  def assert_sensible_probe(run, env:)
    assert_includes run.stdout, "env=#{env} eager_load=#{env == "production"}"
    assert_includes run.stdout, "charge=charged 12.50 formatter=0.99"
    assert_includes run.stdout, "invoice=INV-1 charged 12.50 table=billing_invoices"
    assert_includes run.stdout, "i18n=Hello from the probe / Bonjour de la sonde / Article / Headline / Invoices"
    assert_includes run.stdout, "published=1 first=Hello (published) comments=1"
    assert_includes run.constants, "Payments::Charge"
    assert_includes run.constants, "Billing::Invoice"
    assert_includes run.constants, "PriceFormatter"
    assert_includes run.constants, "TasksController"
    assert_operator run.features.size, :>, 500
    assert(run.features.any? { |f| f.end_with?("/active_record.rb") })
  end
end

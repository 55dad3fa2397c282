# frozen_string_literal: true

require "test_helper"
require "support/differential"
require "support/gem_versions"

# Zeitwerk, the real gem at every version this Ruby runs, with loadout set up before it (as
# config/boot.rb does) and after it: implicit and explicit namespaces, on_load, reload (the
# same file edited in place), eager loading and a plain require of a managed file must do
# exactly what they do without loadout, and Zeitwerk must see the requires its autoloads make.
class RequireZeitwerkTest < Minitest::Test
  include Loadout::TestSupport::Differential

  VERSIONS = Loadout::TestSupport::GemVersions::ZEITWERK

  FILES = [
    ["lib/app/thing.rb", "module App; class Thing; def self.hi = \"v1\"; end; end\n"],
    ["lib/app/payments/charge.rb", "module App; module Payments; class Charge; end; end; end\n"],
    ["lib/billing.rb", "module Billing; def self.explicit = true; end\n"],
    ["lib/billing/invoice.rb", "module Billing; class Invoice; def total = 42; end; end\n"],
    ["lib/tools/helper.rb", "module Tools; module Helper; end; end\n"],
    ["other/plain_lib.rb", "PLAIN_LIB = 1\n"]
  ].freeze

  # ORDER_BEFORE / ORDER_AFTER: where loadout is set up, relative to `require "zeitwerk"`.
  SCRIPT = <<~'RUBY'
    $LOAD_PATH.unshift(ZWLIB, "DIR/other", "DIR/lib")
    require "zeitwerk"
    Loadout::LoadPath.install! if $__with_loadout && $__order == :after
    $seen = []
    module Kernel
      alias_method :__seen_require, :require
      def require(path)
        $seen << path.to_s.sub("DIR/", "") if path.to_s.include?("DIR/lib")
        __seen_require(path)
      end
    end
    loader = Zeitwerk::Loader.new
    loader.push_dir("DIR/lib")
    loader.enable_reloading
    loads = Hash.new(0)
    loader.on_load { |cpath, _value, _abspath| loads[cpath] += 1 }
    loader.on_load("Billing::Invoice") { |klass, _abspath| $invoice_hook = klass.name }
    loader.setup
    check(:implicit_namespace) { [App.class, App::Payments.class] }
    check(:thing) { App::Thing.hi }
    check(:charge) { App::Payments::Charge.name }
    check(:explicit) { [Billing.explicit, Billing::Invoice.new.total, $invoice_hook] }
    check(:plain) { require "plain_lib" }
    check(:managed_by_require) { require "tools/helper" }
    check(:tools) { Tools::Helper.name }
    File.write("DIR/lib/app/thing.rb", "module App; class Thing; def self.hi = \"v2\"; end; end\n")
    loader.reload
    check(:reloaded) { App::Thing.hi }
    loader.eager_load
    check(:eager) { [App::Payments::Charge, Billing::Invoice].map(&:name) }
    check(:loads) { loads.sort }
    check(:seen) { $seen }
    check(:zeitwerk) { Zeitwerk::VERSION }
  RUBY

  NO_BUNDLER = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil, "BUNDLER_SETUP" => nil, "BUNDLE_BIN_PATH" => nil }.freeze

  def run_zeitwerk(version, order, env: {})
    lib = Loadout::TestSupport::GemVersions.lib("zeitwerk", version, versions: VERSIONS)
    with_files(FILES) do |dir|
      reset = -> { File.write("#{dir}/lib/app/thing.rb", FILES[0][1]) }
      setup = "$__with_loadout = true; $__order = #{order.inspect}"
      setup += "; Loadout::LoadPath.install!" if order == :before
      script = SCRIPT.gsub("ZWLIB", lib.dump).gsub("DIR", dir)
      _, with = assert_same_behaviour(script, setup: setup, before_each: reset, env: env)
      assert_equal [:ok, "\"v2\""], with.steps.assoc(:reloaded)[1, 2], "reload ran the new code (Zeitwerk #{version})"
      assert_index_used(with, hits: 1)
      with
    end
  end

  VERSIONS.each do |version|
    test "Zeitwerk #{version}, loadout set up first (config/boot.rb)" do
      with = run_zeitwerk(version, :before)
      assert_includes with.steps.assoc(:seen)[2], "lib/app/payments",
                      "the implicit namespace's directory reached the chain"
    end

    test "Zeitwerk #{version}, loadout set up after it" do
      run_zeitwerk(version, :after)
    end
  end

  # Without Bundler, RubyGems' require sits under Zeitwerk's and loadout answers above it
  # (LoadPath::RubyGemsFront): Zeitwerk's alias of RubyGems' require becomes the front hook.
  %i[before after].each do |order|
    test "Zeitwerk #{VERSIONS.last}, loadout set up #{order == :before ? "first" : "after it"}, " \
         "RubyGems' require in place" do
      with = run_zeitwerk(VERSIONS.last, order, env: NO_BUNDLER)
      assert_operator with.stats[:front].to_i, :>, 0, with.stats.inspect
    end
  end
end

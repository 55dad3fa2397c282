# frozen_string_literal: true

# Warnings on, before anything of loadout loads (bin/test also passes -w).
$VERBOSE = true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
$LOAD_PATH.unshift(__dir__)

# Every Ruby warning whose location is in lib/ fails the test that was running (zeitwerk's suite
# does the same): a redefined method, an already initialized constant, an unused variable, a file
# loaded twice. Recorded rather than raised: an exception raised from inside a warning would be
# rescued by loadout's own fail-safe code and turn into a degrade nobody sees. loadout's own
# messages ("loadout: ...") are not Ruby warnings and pass through.
module Loadout
  module TestSupport
    module LibWarnings
      LIB = "#{File.expand_path("../lib", __dir__)}/"
      @seen = []

      class << self
        attr_reader :seen

        # At a lib/ location, or about a lib/ file (a circular require names the file, at the
        # location of the require call).
        def lib_warning?(message)
          message.include?(": warning: ") && message.include?(LIB)
        end
      end

      def warn(message, *args, **kw)
        LibWarnings.seen << message if LibWarnings.lib_warning?(message)
        kw.empty? ? super(message, *args) : super
      end
    end
  end
end
Warning.singleton_class.prepend(Loadout::TestSupport::LibWarnings)

# Bundler 2.5+ (the Ruby 3.4 and 4.0 roots run their own Bundler 4) exports BUNDLER_SETUP, which
# RubyGems 3.5+ requires as it boots (rubygems.rb), and Bundler 4 BUNDLE_LOCKFILE: a child given
# "RUBYOPT" => nil to run without the suite's bundle still ran its bundler/setup, and one given
# another app's BUNDLE_GEMFILE read the suite's lock. A child that wants the suite's bundle gets it
# from RUBYOPT and BUNDLE_GEMFILE, as under the lock's Bundler 2.3 (which sets neither).
ENV.delete("BUNDLER_SETUP")
ENV.delete("BUNDLE_LOCKFILE")

require "minitest/autorun"
require "loadout"
require "support/tmp_tree"
require "support/subprocess"

# The backend under test goes into the output, so a CI log says which twin ran.
warn "loadout test backend: #{Loadout::BACKEND}" unless ENV["LOADOUT_QUIET_BACKEND"]
ENV["LOADOUT_QUIET_BACKEND"] = "1" # children spawned by tests need not say it again

module Minitest
  class Test
    # zeitwerk's `test "..." do` macro: readable names, and duplicates are an error.
    def self.test(name, &block)
      method = "test_#{name.gsub(/\W+/, "_")}"
      raise ArgumentError, "duplicate test name: #{name}" if method_defined?(method)

      define_method(method, &block)
    end

    include Loadout::TestSupport::TmpTree
    include Loadout::TestSupport::Subprocess

    # (Warnings given while the test files loaded fail the first test.)
    def after_teardown
      super
      seen = Loadout::TestSupport::LibWarnings.seen.dup
      Loadout::TestSupport::LibWarnings.seen.clear
      flunk "Ruby warned about lib/ while this test ran:\n#{seen.join}" unless seen.empty?
    end
  end
end

# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
$LOAD_PATH.unshift(__dir__)

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
  end
end

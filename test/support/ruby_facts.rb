# frozen_string_literal: true

require "tmpdir"

module Loadout
  module TestSupport
    # What the Ruby running the tests does by itself, where versions differ and a test's
    # expectation depends on it. Each answer is read from Ruby, never from loadout.
    module RubyFacts
      module_function

      # Whether the compiler folds __FILE__ interpolated into a string literal into one literal
      # ("at <path>:" as a single object): parse.y does, Prism (the default from Ruby 3.4) does not.
      def folds_file_into_literals?
        return @folds if defined?(@folds)

        @folds = Dir.mktmpdir do |dir|
          file = File.join(dir, "fold.rb")
          File.write(file, "$x = \"<\#{__FILE__}>\"\n")
          RubyVM::InstructionSequence.compile_file(file).to_a.flatten.include?("<#{file}>")
        end
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  module Rake
    # Prepended to Rake::Backtrace's singleton: "rake aborted!" backtraces hide rake's own frames;
    # the frames of these patches stand in for rake's, so they are hidden too, and a failing
    # Rakefile shows the same backtrace as under stock Rake.
    module BacktracePatch # :nodoc:
      DIR = "#{File.expand_path(__dir__)}/"

      def collapse(backtrace)
        super(backtrace.reject { |line| line.start_with?(DIR) })
      end
    end
    private_constant :BacktracePatch
  end
end

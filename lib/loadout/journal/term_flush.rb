# frozen_string_literal: true

module Loadout
  class Journal
    # CRuby turns SIGTERM into a SignalException, so at_exit runs and :none journals are written.
    # JRuby ends the process on SIGTERM without running at_exit, which would lose their buffers.
    # There, while TERM has its default action, a handler writes every open journal and then lets
    # TERM do what it would have done: it restores the default and sends TERM again (same exit
    # status, no at_exit). A handler the application installed is left alone (it decides).
    module TermFlush # :nodoc:
      DEFAULTS = ["DEFAULT", "SYSTEM_DEFAULT", nil].freeze

      @installed = false

      # Whether this engine skips at_exit on SIGTERM (then the handler is needed).
      def self.needed?
        RUBY_ENGINE == "jruby"
      end

      def self.install
        return if @installed || !needed?

        @installed = true
        previous = Signal.trap("TERM") { flush_and_resend(previous) }
        Signal.trap("TERM", previous) unless DEFAULTS.include?(previous)
      rescue ArgumentError
        nil # TERM cannot be trapped here: nothing to do
      end

      def self.flush_and_resend(previous)
        Journal.__close_all
      ensure
        Signal.trap("TERM", previous || "DEFAULT")
        Process.kill(:TERM, Process.pid)
      end
    end
    private_constant :TermFlush
  end
end

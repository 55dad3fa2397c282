# frozen_string_literal: true

module Loadout
  class CLI
    # A progress bar on a terminal; nothing otherwise (the summary line says it all).
    class Progress # :nodoc:
      def initialize(io, total)
        @io = io
        @total = total
        @done = 0
        @tty = io.respond_to?(:tty?) && io.tty?
        @last = 0.0
      end

      def step
        @done += 1
        return unless @tty

        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if now - @last < 0.1 && @done < @total

        @last = now
        width = 30
        filled = (width * @done / @total.to_f).round
        @io.print format("\rprecompile [%-30s] %d/%d", "#" * filled, @done, @total)
      end

      def finish
        @io.print "\r\e[K" if @tty
      end
    end
  end
end

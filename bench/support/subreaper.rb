# frozen_string_literal: true

module Bench
  # Makes this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so
  # a process a boot leaves behind (a cache finishing its writes after exit; loadout starts
  # none) is reparented here: the bench waits for it and its CPU lands in Process.times.cutime like the boot's own.
  # Elsewhere (no prctl) it does nothing and such work goes uncounted (the table says so).
  module Subreaper
    PR_SET_CHILD_SUBREAPER = 36

    module_function

    def enable
      require "fiddle"
      prctl = Fiddle::Function.new(Fiddle.dlopen(nil)["prctl"], [Fiddle::TYPE_INT, Fiddle::TYPE_LONG, Fiddle::TYPE_LONG,
                                                                 Fiddle::TYPE_LONG, Fiddle::TYPE_LONG], Fiddle::TYPE_INT)
      @enabled = prctl.call(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0).zero?
    rescue LoadError, Fiddle::DLError, StandardError
      @enabled = false
    end

    def enabled?
      @enabled
    end

    # Waits for every child (and reparented descendant) to exit.
    def reap_all
      loop { Process.wait(-1) }
    rescue Errno::ECHILD
      nil
    end
  end
end

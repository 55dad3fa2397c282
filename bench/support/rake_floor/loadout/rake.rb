# frozen_string_literal: true

# Not loadout: the floor under any loadout/rake that keeps stock Rake's invocation and only wraps
# it, for `BEFORE_LIB=bench/support/rake_floor ruby bench/rake.rb`. Every FileTask is taken as up to
# date with no stat and no out_of_date? walk, and a missing name becomes a file task without a
# stat, so what is left of a no-op run is Rake invoking each task and its prerequisites. (Its
# decisions are wrong by design: the bench reports decisions: false.)
require "rake"

module RakeFloor
  module FileTask
    def needed?
      false
    end
  end

  module Application
    def synthesize_file_task(task_name)
      define_task(Rake::FileTask, task_name)
    end
  end
end
Rake::FileTask.prepend(RakeFloor::FileTask)
Rake::Application.prepend(RakeFloor::Application)

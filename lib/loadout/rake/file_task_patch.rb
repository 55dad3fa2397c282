# frozen_string_literal: true

module Loadout
  module Rake
    # Prepended to Rake::FileTask. Each method is stock Rake's own code with File.exist?/File.mtime
    # replaced by one memoized stat (Run.mtime); outside a run, or when the stat failed with an
    # errno stock Rake would raise, it calls the stock method (super) so the outcome, exception
    # included, is exactly stock's.
    #
    # Rake changed these methods in 13.1 (ruby/rake#393): before, needed? is
    # `!File.exist?(name) || out_of_date?(timestamp) || build_all` and timestamp checks exist?
    # then mtime; from 13.1 both call File.mtime and rescue only ENOENT. Each shape has its module.
    module FileTaskPatch # :nodoc:
      # Rake 12.3 .. 13.0: a failed stat of any kind means "does not exist".
      module ExistCheck
        def needed?
          stamp = Run.mtime(name)
          return super if stamp.nil?
          return true unless stamp.is_a?(Time)

          out_of_date?(timestamp) || @application.options.build_all
        end

        def timestamp
          stamp = Run.mtime(name)
          return super if stamp.nil?

          stamp.is_a?(Time) ? stamp : ::Rake::LATE
        end
      end

      # Rake 13.1 and later: only ENOENT means "does not exist"; other errnos propagate.
      module MtimeRescue
        def needed?
          stamp = Run.mtime(name)
          unless stamp.is_a?(Time)
            return true if stamp.equal?(:enoent)

            return super # outside a run, or an errno File.mtime raises
          end

          begin
            out_of_date?(stamp) || @application.options.build_all
          rescue Errno::ENOENT
            true
          end
        end

        def timestamp
          stamp = Run.mtime(name)
          return stamp if stamp.is_a?(Time)
          return ::Rake::LATE if stamp.equal?(:enoent)

          super
        end
      end

      # Stock out_of_date? walks all_prerequisite_tasks and resolves each one again by name
      # (application[prereq, @scope]) before asking its timestamp. When every one of those names
      # is in the run's lookup cache, the cached task is exactly what that call returns, so it is
      # read directly; otherwise stock code runs. Same tasks, same order, same short-circuit.
      #
      # Shortcut: when the task's remembered prerequisite list is "direct" (see
      # TaskPatch#__loadout_direct_prerequisites: leaves with distinct names, each what the lookup
      # cache holds for its own name), all_prerequisite_tasks is exactly that list and each
      # re-resolution returns the element itself, so the list is walked as is.
      module OutOfDate
        private

        def out_of_date?(stamp)
          return super unless __loadout_plain?
          # Stock walks all_prerequisite_tasks, which is [] for a task without prerequisites.
          return false if __loadout_leaf?

          direct = __loadout_direct_prerequisites
          return __loadout_any_newer?(direct, stamp) if direct

          by_name = Run.lookups_for(application, @scope) or return super
          resolved = all_prerequisite_tasks.map do |prereq|
            task = prereq.__loadout_plain? && by_name[prereq.name]
            break unless task

            task
          end
          return super unless resolved

          __loadout_any_newer?(resolved, stamp)
        end

        # The block of stock out_of_date?'s any?, over already-resolved tasks.
        def __loadout_any_newer?(tasks, stamp)
          tasks.any? do |prereq_task|
            if prereq_task.instance_of?(::Rake::FileTask)
              prereq_task.timestamp > stamp || @application.options.build_all
            else
              prereq_task.timestamp > stamp
            end
          end
        end
      end

      # Rake::FileCreationTask#needed? is `!File.exist?(name)` in every supported version.
      module Creation
        def needed?
          stamp = Run.mtime(name)
          return super if stamp.nil?

          !stamp.is_a?(Time)
        end
      end
    end
    private_constant :FileTaskPatch
  end
end

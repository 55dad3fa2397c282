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

          memo = __loadout_direct_prerequisites
          if memo
            names = memo[5]
            return names ? __loadout_any_newer_file?(memo[3], names, stamp) : __loadout_any_newer?(memo[3], stamp)
          end

          by_name = Run.lookups_for(application, @scope) or return super
          resolved = all_prerequisite_tasks.map do |prereq|
            task = prereq.__loadout_plain? && by_name[prereq.name]
            break unless task

            task
          end
          return super unless resolved

          __loadout_any_newer?(resolved, stamp)
        end

        # The block of stock out_of_date?'s any?, over already-resolved tasks, in stock's order and
        # with stock's short-circuit. Two things are read less often, with the same results:
        # - while Rake::FileTask#timestamp is this module's (+stats+ given), options.build_all is
        #   read where stock first reads it and then reused until another class's timestamp
        #   runs: in between only this module's timestamps run, which run no other code, so the
        #   option cannot have changed;
        # - a Rake::FileTask's timestamp is then read from the run's stat memo when the memo
        #   holds a Time for its name (exactly what the method returns).
        def __loadout_any_newer?(tasks, stamp)
          stats = OutOfDate.memo_timestamps
          build_all = nil
          i = 0
          n = tasks.size
          while i < n
            prereq_task = tasks[i]
            i += 1
            if prereq_task.instance_of?(::Rake::FileTask)
              time = stats && stats[prereq_task.name]
              time = prereq_task.timestamp unless time.is_a?(Time)
              return true if time > stamp

              build_all = @application.options.build_all if build_all.nil? || !stats
              return true if build_all
            else
              return true if prereq_task.timestamp > stamp

              build_all = nil # that timestamp may have run any code
            end
          end
          false
        end

        # __loadout_any_newer? for a list of Rake::FileTask instances named +names+ (in order),
        # without asking each its class and name. Time <=> Time is what Comparable#> asks.
        def __loadout_any_newer_file?(tasks, names, stamp)
          stats = OutOfDate.memo_timestamps
          return __loadout_any_newer?(tasks, stamp) unless stats && stamp.instance_of?(Time)

          build_all = nil
          i = 0
          n = tasks.size
          while i < n
            time = stats[names[i]]
            if time.is_a?(Time)
              return true if (time <=> stamp) == 1
            elsif tasks[i].timestamp > stamp
              return true
            end
            i += 1
            build_all = @application.options.build_all if build_all.nil?
            return true if build_all
          end
          false
        end

        @timestamp_owners = nil
        @memo_timestamps = [nil, false] # [epoch, answer]

        class << self
          # The FileTask#timestamp implementations that are this gem's (set at install).
          attr_writer :timestamp_owners

          # The run's stat memo when Rake::FileTask#timestamp is still this gem's (a Time in the
          # memo for a task's name is then exactly what the method returns); nil otherwise.
          # The method owner is checked once per memo epoch.
          def memo_timestamps #: () -> Hash[String, untyped]?
            stats = Run.stats or return nil
            epoch, answer = @memo_timestamps
            unless epoch == Run.epoch
              owners = @timestamp_owners
              answer = owners ? owners.include?(::Rake::FileTask.instance_method(:timestamp).owner) : false
              @memo_timestamps = [Run.epoch, answer]
            end
            answer ? stats : nil
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

# frozen_string_literal: true

require_relative "../task_patch"

module Loadout
  module Rake
    # TaskPatch, continued (task_patch.rb says why one module spans files): resolving a task's
    # prerequisite names to tasks. The run's lookup cache is read directly, the resolved list is
    # remembered for the epoch, collect_prerequisites stops at leaves, and a "direct" remembered
    # list is handed to FileTask#out_of_date? as all_prerequisite_tasks' answer.
    module TaskPatch # :nodoc:
      # Stock: (prerequisites + order_only_prerequisites).map { |n| lookup_prerequisite(n) }.
      def prerequisite_tasks
        return super unless __loadout_plain?

        tasks = __loadout_prerequisite_tasks
        tasks.frozen? ? tasks.dup : tasks
      end

      def collect_prerequisites(seen)
        tasks = __loadout_plain? ? __loadout_prerequisite_tasks : prerequisite_tasks
        tasks.each do |pre|
          if pre.__loadout_leaf?
            # Stock name for a plain task: ask once. Nothing below a leaf to collect.
            name = pre.name
            seen[name] ||= pre
          else
            next if seen[pre.name]

            seen[pre.name] = pre
            pre.collect_prerequisites(seen)
          end
        end
      end
      protected :collect_prerequisites

      # prerequisite_tasks for a plain task; the result may be the frozen memo (do not mutate).
      #
      # During a run, a name found in the lookup cache is read from it directly (a cached hit is
      # exactly what that lookup returns, and has no side effect); any other name (not cached, or
      # resolving to the task itself) goes through stock lookup_prerequisite, in the same order.
      # The list is remembered when every element is also what the lookup cache now holds for
      # its name (so no element came from lookup_prerequisite's unscoped retry; only the elements
      # lookup_prerequisite returned are compared when no cache entry was dropped meanwhile, see
      # Run.drop_gen), and reused until
      # the epoch ends, any task table changes, or the prerequisite names change.
      def __loadout_prerequisite_tasks
        names = __loadout_prerequisite_names
        return NO_TASKS if names.empty?

        memo = @__loadout_prereqs
        if memo && memo[0] == Run.epoch && memo[1] == Run.table_gen && memo[2] == names
          return memo[3]
        end

        epoch = Run.epoch
        by_name = Run.lookups_for(application, @scope)
        drop_gen = Run.drop_gen
        looked_up = nil # indexes resolved by lookup_prerequisite rather than read from the cache
        tasks = Array.new(names.size)
        i = 0
        while i < names.size
          n = names[i]
          task = by_name && by_name[n.to_s]
          if task.nil? || task.equal?(self)
            task = lookup_prerequisite(n)
            (looked_up ||= []) << i
          end
          tasks[i] = task
          i += 1
        end
        # Elements read from the cache are still what it holds unless an entry was dropped since.
        checked = by_name && Run.drop_gen == drop_gen ? looked_up || NO_TASKS : nil
        __loadout_memo_prerequisites(names, tasks, checked, epoch)
        tasks
      end
      protected :__loadout_prerequisite_tasks

      NO_TASKS = [].freeze
      private_constant :NO_TASKS

      # +checked+: the indexes whose element must be compared with the lookup cache (nil: all).
      # +epoch+: the epoch the list was resolved in (a later one holds a different cache).
      def __loadout_memo_prerequisites(names, tasks, checked, epoch)
        table_gen = Run.table_gen
        return unless Run.epoch == epoch

        by_name = Run.lookups_for(application, @scope) or return
        if checked
          checked.each { |i| return if tasks[i].equal?(self) || !by_name[names[i].to_s].equal?(tasks[i]) }
        end
        direct = true
        files = true   # every element an instance of Rake::FileTask (a class never changes)
        strings = true # every name a String (so names[i].to_s is names[i])
        # By task, not name: hashing a task is cheap, and with task.name == name, distinct tasks
        # mean distinct names.
        seen = {}.compare_by_identity
        i = 0
        while i < names.size
          task = tasks[i]
          n = names[i]
          name = n.to_s
          return if !checked && (task.equal?(self) || !by_name[name].equal?(task))

          # Direct: the element is what the cache holds for its own name, and no two share one.
          direct &&= task.__loadout_named?(name) && !seen[task]
          seen[task] = true
          files &&= task.instance_of?(::Rake::FileTask)
          strings &&= name.equal?(n)
          i += 1
        end
        names = names[0, names.size].freeze # a copy (slicing shares the buffer until either changes)
        # [5]: the elements' names, when the list is direct and made of Rake::FileTasks only.
        @__loadout_prereqs = [epoch, table_gen, names, tasks.freeze, direct, direct && files && strings ? names : nil]
      end
      private :__loadout_memo_prerequisites

      # The remembered prerequisite memo (see __loadout_memo_prerequisites) when its list, [3],
      # is exactly what all_prerequisite_tasks returns and what out_of_date? re-resolves each
      # element to: still valid (same epoch, table and names), "direct" and made only of leaves
      # (nothing to collect below them, checked now since a prerequisite may have been enhanced
      # since). nil otherwise. Frozen; do not mutate.
      def __loadout_direct_prerequisites
        memo = @__loadout_prereqs or return nil
        return nil unless memo[4] && memo[0] == Run.epoch && memo[1] == Run.table_gen &&
                          memo[2] == __loadout_prerequisite_names

        tasks = memo[3]
        i = 0
        while i < tasks.size
          return nil unless tasks[i].__loadout_leaf?

          i += 1
        end
        memo
      end
      protected :__loadout_direct_prerequisites

      if ORDER_ONLY
        def __loadout_prerequisite_names
          order_only = order_only_prerequisites
          order_only.empty? ? prerequisites : prerequisites + order_only
        end
      else
        def __loadout_prerequisite_names
          prerequisites
        end
      end
      private :__loadout_prerequisite_names
    end
  end
end

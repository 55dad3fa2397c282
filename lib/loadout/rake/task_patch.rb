# frozen_string_literal: true

module Loadout
  module Rake
    # Prepended to Rake::Task.
    #
    # - invoke: marks where a run starts and ends (the memo lives only inside a run).
    # - execute: an action may write any file or change the task table, so every execute starts a
    #   new memo epoch.
    # - invoke_prerequisites: skips re-invoking a prerequisite that already finished. Stock Rake
    #   calls it anyway; for a finished task that call only builds a TaskArguments, appends to the
    #   invocation chain (which cannot hold a finished task, so no circular-dependency error) and
    #   returns under the task's lock. Skipped only when nothing could be observed: no --trace
    #   (stock prints "** Invoke" lines), no failed previous invocation (stock re-raises it), the
    #   task is "plain" (below) and it is not currently being re-invoked.
    # - prerequisite_tasks: reads names already in the run's lookup cache directly, and remembers
    #   the resolved list until the epoch ends, a task table changes or the names change (stock
    #   resolves it again for invoke_prerequisites and for every all_prerequisite_tasks walk).
    # - collect_prerequisites (behind all_prerequisite_tasks, which FileTask#out_of_date? walks
    #   for every file task): does not recurse into a prerequisite without prerequisites.
    #
    # The shortcuts apply only to tasks of "plain" classes: those that keep stock Rake's (or this
    # module's) version of every method a shortcut stands in for.
    module TaskPatch # :nodoc:
      STAND_INS = %i[
        invoke_with_call_chain invoke_prerequisites prerequisite_tasks collect_prerequisites
        all_prerequisite_tasks lookup_prerequisite prerequisites arg_names name to_s
      ].freeze
      # Rake 13.0 added order-only prerequisites (`task a: b | c`).
      ORDER_ONLY = ::Rake::Task.method_defined?(:order_only_prerequisites)

      @plain_classes = {}.compare_by_identity

      # True when +klass+ overrides none of STAND_INS (each owned by this module or Rake::Task).
      def self.plain_class?(klass) #: (Class) -> bool
        plain = @plain_classes[klass]
        return plain unless plain.nil?

        names = ORDER_ONLY ? STAND_INS + [:order_only_prerequisites] : STAND_INS
        @plain_classes[klass] = names.all? do |m|
          owner = klass.instance_method(m).owner
          owner.equal?(self) || owner.equal?(::Rake::Task)
        end
      end

      def invoke(*args)
        Run.enter
        begin
          super
        ensure
          Run.leave
        end
      end

      def execute(args = nil)
        super
      ensure
        Run.changed!
      end

      def invoke_prerequisites(task_args, invocation_chain)
        options = application.options
        return super if options.always_multitask || options.trace

        tasks = __loadout_plain? ? __loadout_prerequisite_tasks : prerequisite_tasks
        tasks.each do |p|
          next if p.__loadout_finished?

          p.invoke_with_call_chain(task_args.new_scope(p.arg_names), invocation_chain)
        end
      end

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
      # its name (so no element came from lookup_prerequisite's unscoped retry), and reused until
      # the epoch ends, any task table changes, or the prerequisite names change.
      def __loadout_prerequisite_tasks
        names = __loadout_prerequisite_names
        return NO_TASKS if names.empty?

        memo = @__loadout_prereqs
        if memo && memo[0] == Run.epoch && memo[1] == Run.table_gen && memo[2] == names
          return memo[3]
        end

        by_name = Run.lookups_for(application, @scope)
        tasks = names.map do |n|
          task = by_name && by_name[n.to_s]
          task.nil? || task.equal?(self) ? lookup_prerequisite(n) : task
        end
        __loadout_memo_prerequisites(names, tasks)
        tasks
      end
      protected :__loadout_prerequisite_tasks

      NO_TASKS = [].freeze
      private_constant :NO_TASKS

      def invoke_with_call_chain(task_args, invocation_chain)
        # Only the call that finds the task not yet invoked does (or waits behind) the real work;
        # a reentrant call from the task's own action must not mark it finished early.
        first = !@already_invoked
        @__loadout_finished = false if first
        super
        @__loadout_finished = true if first
      end
      protected :invoke_with_call_chain

      # Plain, finished successfully, and not reenabled since: invoking it again is a no-op.
      def __loadout_finished?
        @__loadout_finished && @already_invoked && __loadout_plain?
      end

      # Plain and without prerequisites of any kind: no lookups, nothing to collect.
      # (The accessors of a plain task are stock attr_readers, so their ivars are read directly.)
      if ORDER_ONLY
        def __loadout_leaf?
          plain = @__loadout_plain
          plain = __loadout_plain? if plain.nil?
          plain && @prerequisites.empty? && @order_only_prerequisites.empty?
        end
      else
        def __loadout_leaf?
          plain = @__loadout_plain
          plain = __loadout_plain? if plain.nil?
          plain && @prerequisites.empty?
        end
      end

      def __loadout_plain?
        plain = @__loadout_plain
        plain.nil? ? (@__loadout_plain = TaskPatch.plain_class?(self.class)) : plain
      end
      protected :__loadout_finished?, :__loadout_leaf?, :__loadout_plain?

      def __loadout_memo_prerequisites(names, tasks)
        epoch = Run.epoch
        table_gen = Run.table_gen
        by_name = Run.lookups_for(application, @scope) or return
        i = 0
        while i < names.size
          task = tasks[i]
          return if task.equal?(self) || !by_name[names[i].to_s].equal?(task)

          i += 1
        end
        @__loadout_prereqs = [epoch, table_gen, names.dup.freeze, tasks.freeze]
      end
      private :__loadout_memo_prerequisites

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
    private_constant :TaskPatch
  end
end

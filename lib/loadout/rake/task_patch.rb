# frozen_string_literal: true

module Loadout
  module Rake
    # Prepended to Rake::Task.
    #
    # - invoke: marks where a run starts and ends (the memo lives only inside a run).
    # - execute: an action may write any file or change the task table, so every execute starts
    #   and ends a memo epoch, and no stat is memoized while it runs.
    # - invoke_prerequisites: skips re-invoking a prerequisite that already finished. Stock Rake
    #   calls it anyway; for a finished task that call only builds a TaskArguments, appends to the
    #   invocation chain (which cannot hold a finished task, so no circular-dependency error) and
    #   returns under the task's lock. Skipped only when nothing could be observed: no --trace
    #   (stock prints "** Invoke" lines), no failed previous invocation (stock re-raises it), the
    #   task is "plain" (below) and it is not currently being re-invoked. A leaf prerequisite not
    #   yet invoked is invoked without building the InvocationChain and TaskArguments stock builds
    #   first, and any other plain task not invoked yet without the TaskArguments (see
    #   __loadout_invoke_fast): most of a no-op run's allocations.
    # - prerequisite_tasks: reads names already in the run's lookup cache directly, and remembers
    #   the resolved list until the epoch ends, a task table changes or the names change (stock
    #   resolves it again for invoke_prerequisites and for every all_prerequisite_tasks walk).
    # - collect_prerequisites (behind all_prerequisite_tasks, which FileTask#out_of_date? walks
    #   for every file task): does not recurse into a prerequisite without prerequisites; and
    #   out_of_date? skips that walk altogether when the remembered list already is its answer
    #   (__loadout_direct_prerequisites).
    #
    # The shortcuts apply only to tasks of "plain" classes: those that keep stock Rake's (or this
    # module's) version of every method a shortcut stands in for.
    #
    # One module written in three files, one concern each:
    # - this one: what a task is (plain, a leaf, finished) and the run marks of invoke, execute
    #   and invoke_with_call_chain;
    # - task_patch/prerequisite_invocation.rb: invoke_prerequisites and the fast invoke;
    # - task_patch/prerequisite_resolution.rb: prerequisite_tasks, its remembered list and
    #   collect_prerequisites.
    # One module, not mixins: every stand-in must be owned by the module prepended to Rake::Task
    # (plain_class? compares owners with it, Support.watch empties it to turn the patch off), and
    # Rake::Task's ancestors stay stock's plus this one.
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
        Run.action_started
        begin
          super
        ensure
          Run.action_finished
        end
      end

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
        @__loadout_finished && @already_invoked && (@__loadout_plain || __loadout_plain?)
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

      # Plain and named +name+ (a plain task's name is rake's attr, @name.to_s: no other code).
      def __loadout_named?(name)
        (@__loadout_plain || __loadout_plain?) && @name.to_s == name
      end
      protected :__loadout_named?
    end
    private_constant :TaskPatch
  end
end

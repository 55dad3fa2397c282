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

      def invoke_prerequisites(task_args, invocation_chain)
        options = application.options
        return super if options.always_multitask || options.trace

        tasks = __loadout_plain? ? __loadout_prerequisite_tasks : prerequisite_tasks
        __loadout_invoke_each(tasks, task_args, invocation_chain, nil)
      end

      # Stock invoke_prerequisites' sequential loop over +tasks+, each invoked with
      # task_args.new_scope(p.arg_names) and +invocation_chain+, through the shortcuts below.
      # +parent+: nil, or this task itself when invoked through __loadout_invoke_fast, and then
      # task_args is nil and this task's own arguments are made only when needed
      # (__loadout_arguments). The caller has ruled out --trace and always_multitask.
      def __loadout_invoke_each(tasks, task_args, invocation_chain, parent)
        epoch = Run.epoch
        stock = false
        i = 0
        while i < tasks.size
          p = tasks[i]
          i += 1
          # A task ran since options were read: its action may have turned on --trace, which
          # stock reads again in every prerequisite's invoke_with_call_chain.
          unless epoch == Run.epoch
            epoch = Run.epoch
            stock = application.options.trace
          end
          unless stock
            next if p.__loadout_finished?
            next if p.__loadout_invoke_fast(task_args, invocation_chain, parent)
          end

          args = parent ? __loadout_arguments : task_args
          p.invoke_with_call_chain(args.new_scope(p.arg_names), invocation_chain)
        end
      end
      private :__loadout_invoke_each

      # Stock invoke_with_call_chain(parent_args.new_scope(arg_names), invocation_chain) for a
      # plain task not invoked yet, without building that TaskArguments first: it is only passed
      # to execute and to new_scope for prerequisites, so it is built when one of them needs it,
      # once (new_scope reads the parent's arguments and this task's arg names, which none of
      # this can change; TaskArguments must be rake's own). With +parent+ given (a task invoked
      # through this method), parent_args is ignored and the parent's arguments are asked of it
      # (__loadout_arguments), made then.
      #
      # A leaf (no prerequisites) also skips the InvocationChain stock builds first: it is only
      # used to detect a cycle (member? is asked instead), to invoke prerequisites (none) and to
      # label an exception (built then). Other tasks invoke their prerequisites like
      # invoke_prerequisites does, after reading always_multitask and trace as stock would.
      #
      # Returns false, having done nothing, when stock must run: the task was invoked already
      # (stock returns or re-raises its failure), is not plain, or TaskArguments is not rake's
      # own. A cycle raises stock's error from InvocationChain.append, or makes a leaf return
      # false. The caller has ruled out --trace.
      def __loadout_invoke_fast(parent_args, invocation_chain, parent)
        return false if @already_invoked || !RECORDS_FAILURE || !TaskPatch.stock_arguments?

        plain = @__loadout_plain
        plain = __loadout_plain? if plain.nil?
        return false unless plain

        if __loadout_leaf?
          return false if invocation_chain.member?(self)

          @lock.synchronize do
            return false if @already_invoked

            @already_invoked = true
            @__loadout_finished = false
            begin
              if needed?
                args = parent ? parent.__loadout_arguments : parent_args
                execute(args.new_scope(arg_names))
              end
            rescue Exception => e # rubocop:disable Lint/RescueException -- as stock: recorded, re-raised
              add_chain_to(e, ::Rake::InvocationChain.append(self, invocation_chain))
              @invocation_exception = e
              raise e
            end
            @__loadout_finished = true
          end
          return true
        end

        options = application.options
        return false if options.always_multitask || options.trace

        parent_args = parent.__loadout_arguments if parent
        # Stock's first step: raises "Circular dependency detected" when this task is in the chain.
        new_chain = ::Rake::InvocationChain.append(self, invocation_chain)
        @lock.synchronize do
          return false if @already_invoked

          @already_invoked = true
          @__loadout_finished = false
          @__loadout_parent_args = parent_args
          @__loadout_arg_names = @arg_names
          @__loadout_args = nil
          begin
            __loadout_invoke_each(__loadout_prerequisite_tasks, nil, new_chain, self)
            execute(__loadout_arguments) if needed?
          rescue Exception => e # rubocop:disable Lint/RescueException -- as stock: recorded, re-raised
            add_chain_to(e, new_chain)
            @invocation_exception = e
            raise e
          ensure
            @__loadout_parent_args = @__loadout_args = @__loadout_arg_names = nil
          end
          @__loadout_finished = true
        end
        true
      end
      protected :__loadout_invoke_fast

      # This task's arguments while it is invoked through __loadout_invoke_fast: what stock
      # builds first, parent_args.new_scope(arg_names) (arg_names as they were then), made once.
      def __loadout_arguments
        @__loadout_args ||= @__loadout_parent_args.new_scope(@__loadout_arg_names || [])
      end
      protected :__loadout_arguments

      # Whether stock invoke_with_call_chain (read from rake's source, as installed) remembers a
      # failure in @invocation_exception, as __loadout_invoke_fast does (rake 13; 12.3 does not, and
      # then the shortcut is off).
      RECORDS_FAILURE = begin
        file, line = ::Rake::Task.instance_method(:invoke_with_call_chain).source_location
        body = file && line ? File.foreach(file, mode: "rb").drop(line - 1).take_while { |l| !l.start_with?("    end") } : []
        body.any? { |l| l.include?("@invocation_exception = ex") }
      rescue SystemCallError
        false
      end

      STOCK_ARGUMENTS = %i[initialize new_scope [] extras lookup].to_h do |m|
        [m, ::Rake::TaskArguments.instance_method(m)]
      end.freeze
      @stock_arguments = [nil, nil] # [epoch, answer]

      # True when TaskArguments still has rake's own new_scope (and what it calls): building one
      # later is then the same as building it first. Checked once per memo epoch.
      def self.stock_arguments? #: () -> bool
        epoch, answer = @stock_arguments
        return answer if epoch == Run.epoch

        answer = STOCK_ARGUMENTS.all? { |m, meth| ::Rake::TaskArguments.instance_method(m) == meth } &&
                 ::Rake::TaskArguments.method(:new).owner.equal?(Class)
        @stock_arguments = [Run.epoch, answer]
        answer
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

      # Plain and named +name+ (a plain task's name is rake's attr, @name.to_s: no other code).
      def __loadout_named?(name)
        (@__loadout_plain || __loadout_plain?) && @name.to_s == name
      end
      protected :__loadout_named?

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
    private_constant :TaskPatch
  end
end

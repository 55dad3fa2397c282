# frozen_string_literal: true

require_relative "../task_patch"

module Loadout
  module Rake
    # TaskPatch, continued (task_patch.rb says why one module spans files): invoking a task's
    # prerequisites. Stock invoke_prerequisites' loop, skipping prerequisites that already
    # finished, and the fast invoke of a plain task not invoked yet, which defers the
    # TaskArguments (and for a leaf the InvocationChain) stock builds first.
    module TaskPatch # :nodoc:
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
    end
  end
end

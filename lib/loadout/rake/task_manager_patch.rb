# frozen_string_literal: true

module Loadout
  module Rake
    # Prepended to Rake::Application (which includes Rake::TaskManager). During a run it caches
    # TaskManager#[] results, which stock Rake recomputes for every prerequisite several times per
    # task (invoke_prerequisites, all_prerequisite_tasks, out_of_date?): that resolution, not the
    # stat, is most of a no-op run's time.
    #
    # Cached: results computed while the table did not change (plain table hits), and, in the
    # top-level scope, results that stock lookup now confirms (a task just synthesized or made by
    # a rule): there the only candidate name is the name itself, and a table entry is never
    # replaced, so the answer cannot change until the table is cleared. A call that raised is not
    # cached. Names holding "rake:" or "^" (lookup's scope escapes) are never cached. New tasks
    # drop the entries they could shadow (see Run.task_added); clear drops them all.
    module TaskManagerPatch # :nodoc:
      @plain_lookup = {}.compare_by_identity

      # True when +klass+ keeps TaskManager's lookup and lookup_in_scope (so a top-level lookup
      # of a plain name reads @tasks[name] and nothing else) and enhance_with_matching_rule.
      def self.plain_lookup?(klass) #: (Class) -> bool
        plain = @plain_lookup[klass]
        return plain unless plain.nil?

        @plain_lookup[klass] = %i[lookup lookup_in_scope enhance_with_matching_rule].all? do |m|
          klass.instance_method(m).owner.equal?(::Rake::TaskManager)
        end
      end

      @plain_define = {}.compare_by_identity

      # True when define_task(Rake::FileTask, name) on +klass+ runs rake's own code throughout.
      def self.plain_define?(klass) #: (Class) -> bool
        plain = @plain_define[klass]
        return plain unless plain.nil?

        define_owner = klass.instance_method(:define_task).owner
        @plain_define[klass] =
          (define_owner.equal?(::Rake::TaskManager) || define_owner.equal?(self)) &&
          %i[resolve_args resolve_args_with_dependencies].all? do |m|
            klass.private_method_defined?(m) || klass.method_defined?(m) ? klass.instance_method(m).owner.equal?(::Rake::TaskManager) : false
          end &&
          ::Rake::FileTask.method(:scope_name).owner.equal?(::Rake::FileTask.singleton_class) &&
          ::Rake::Task.method(:format_deps).owner.equal?(::Rake::Task.singleton_class) &&
          ::Rake::FileTask.instance_method(:enhance).owner.equal?(::Rake::Task) &&
          ::Rake.method(:from_pathname).owner.equal?(::Rake.singleton_class)
      end

      # Whether stock define_task (read from rake's source, as installed) is the shape the fast
      # path below reproduces; otherwise the fast path is off.
      STOCK_DEFINE = begin
        file, line = ::Rake::TaskManager.instance_method(:define_task).source_location
        body = file && line ? File.foreach(file, mode: "rb").drop(line - 1).take_while { |l| !l.start_with?("    end") }.join : ""
        body.include?("resolve_args(args)") && body.include?("task.enhance(Task.format_deps(deps), &block)") &&
          body.include?("if Rake::TaskManager.record_task_metadata") && ::Rake::Task.respond_to?(:format_deps)
      rescue SystemCallError
        false
      end

      # `file "x.o" => [...]` (Rake::FileTask, one name => dependencies pair, all plain Strings), with
      # task metadata off (no -T/-W/-D/-P): stock define_task then resolves the arguments to
      # that name and list, maps each dependency through Rake.from_pathname (which returns a
      # String as is) into a new array, interns the task and enhances it with that array and the
      # block. That is done directly when the classes involved keep rake's methods; anything else
      # (other classes, arguments, order-only, Pathnames, namespaces do not matter to a FileTask)
      # is stock code.
      def define_task(task_class, *args, &block)
        return super unless STOCK_DEFINE && task_class.equal?(::Rake::FileTask) && args.size == 1 &&
                            !::Rake::TaskManager.record_task_metadata

        pair = args[0]
        return super unless pair.instance_of?(Hash) && pair.size == 1 && TaskManagerPatch.plain_define?(self.class)

        # (Not pair.first: Enumerable#first stops the iteration with a break, which costs more
        # than the rest of this method.)
        task_name = deps = nil
        pair.each_pair do |k, v|
          task_name = k
          deps = v
        end
        return super unless task_name.instance_of?(String)

        if deps.instance_of?(String)
          deps = [deps]
        elsif !(deps.instance_of?(Array) && deps.all? { |d| d.instance_of?(String) })
          return super
        end
        # (format_deps would hand enhance a copy; rake's enhance only reads it, `|=` copies.)
        intern(::Rake::FileTask, task_name).enhance(deps, &block)
      end

      # Whether stock TaskManager#[] (read from rake's source, as installed) is lookup, then
      # rules, then synthesize_file_task, then fail, as #[] reproduces for top-level names.
      STOCK_LOOKUP = begin
        file, line = ::Rake::TaskManager.instance_method(:[]).source_location
        body = file && line ? File.foreach(file, mode: "rb").drop(line - 1).take_while { |l| !l.start_with?("    end") }.join : ""
        body.gsub(/\s+/, " ").include?(
          "task_name = task_name.to_s self.lookup(task_name, scopes) or enhance_with_matching_rule(task_name) or " \
          "synthesize_file_task(task_name) or fail generate_message_for_undefined_task(task_name)"
        )
      rescue SystemCallError
        false
      end

      def [](task_name, scopes = nil)
        cache = Run.lookup_cache(self) or return super

        name = task_name.to_s
        scope = scopes || @scope
        by_name = cache[scope]
        if by_name
          task = by_name[name]
          return task if task
        end
        return super if name.include?("rake:") || name.include?("^")

        epoch = Run.epoch
        table_gen = Run.table_gen
        clear_gen = Run.clear_gen
        # The top-level scope is Scope::EMPTY, an EmptyScope (a LinkedList, not a Rake::Scope).
        top_level = (scope.is_a?(::Rake::Scope::EmptyScope) || scope.is_a?(::Rake::Scope)) && scope.empty? &&
                    TaskManagerPatch.plain_lookup?(self.class)
        if top_level
          # Stock lookup in the top-level scope is exactly @tasks[name] for such a name.
          task = @tasks[name]
          if task
            Run.remember_top_level(cache, scope, name, task, clear_gen, epoch)
            return task
          end
        end

        # Stock: lookup (nil here, as just seen), then enhance_with_matching_rule (nil without
        # rules), then synthesize_file_task, else fail. Without rules, synthesize_file_task is
        # called directly; when it returns nil, stock code runs (and raises from rake's frame).
        task = (top_level && STOCK_LOOKUP && @rules.empty? && synthesize_file_task(name)) || super
        if Run.table_gen == table_gen
          Run.remember(cache, scope, name, task, table_gen, epoch)
        elsif top_level && @tasks[name].equal?(task)
          Run.remember_top_level(cache, scope, name, task, clear_gen, epoch)
        end
        task
      end

      # Stock: `return nil unless File.exist?(task_name); define_task(Rake::FileTask, task_name)`
      # (the same in every supported version); here the existence check is the memoized stat.
      #
      # With task metadata off (no -T/-W/-D/-P) that define_task call, for a FileTask with no
      # arguments, prerequisites or block, does nothing but intern the task and enhance it with
      # no prerequisites; that is done directly when the classes involved keep rake's methods.
      def synthesize_file_task(task_name)
        stamp = Run.mtime(task_name)
        return super if stamp.nil?
        return nil unless stamp.is_a?(Time)
        if ::Rake::TaskManager.record_task_metadata || !TaskManagerPatch.plain_define?(self.class) ||
           !task_name.instance_of?(String)
          return define_task(::Rake::FileTask, task_name)
        end

        # enhance([]) on a task intern just created only replaces its empty prerequisite list
        # with a copy; on an existing one it drops duplicate prerequisites, so it runs then.
        existed = @tasks.key?(task_name)
        task = intern(::Rake::FileTask, task_name)
        task.enhance([]) if existed
        task
      end

      def intern(task_class, task_name)
        super
      ensure
        Run.task_added(self, task_name.to_s)
      end

      def clear
        super
      ensure
        Run.table_cleared(self)
      end
    end
    private_constant :TaskManagerPatch
  end
end

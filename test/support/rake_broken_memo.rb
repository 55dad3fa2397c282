# frozen_string_literal: true

# Loaded only into rake subprocesses started by the rake differential tests (never by
# lib/loadout): injects one deliberate bug into loadout/rake's memo, chosen by
# LOADOUT_RAKE_BREAK, so each scenario can prove it detects a wrong memo.
#
#   never_invalidate    executing a task never drops remembered stats
#   trusted_in_actions  the memo stays in use while an action runs (dropped only when it returns)
#   own_path_only       executing a file task drops only its own path (misses side outputs)
#   enoent_as_fresh     a missing file is reported as existing and brand new
#   basename_key        stats are remembered by basename (two paths share one entry)
#   second_resolution   mtimes are truncated to whole seconds
#   direct_first_only   out_of_date?'s direct walk sees only the first prerequisite
#   leaf_skips_execute  invoking a not-yet-invoked leaf prerequisite never runs its action
#   fast_skips_execute  a task with prerequisites invoked through the fast path never runs its action
#   fast_args_unscoped  the fast path hands a task its parent's arguments (no new_scope)
#   trace_read_once     invoking prerequisites never notices an action turning on --trace
#   stale_timestamps    out_of_date? reads each path's first timestamp of the run from the memo
#   synth_before_rules  a name missing from the task table is synthesized without trying rules
#   define_first_dep    the `file name => deps` fast path keeps only the first dependency
require "loadout/rake"

module Loadout
  module TestSupport
    module RakeBrokenMemo
      RUN = Loadout::Rake.const_get(:Run)
      MODE = ENV.fetch("LOADOUT_RAKE_BREAK")

      module OwnPathOnly
        def execute(*)
          super
        ensure
          RUN.stats&.delete(name) if is_a?(::Rake::FileTask)
        end
      end

      # Shortcuts other than the memo, broken the same way: each one's own mode.
      module DirectFirstOnly
        def __loadout_direct_prerequisites
          memo = super or return nil
          memo = memo.dup
          memo[3] = memo[3].first(1)
          memo
        end
      end

      module LeafSkipsExecute
        def execute(*)
          super unless prerequisites.empty? == (MODE == "leaf_skips_execute") &&
                       caller_locations(1, 1).first.label.include?("__loadout_invoke_fast")
        end
      end

      module FastArgsUnscoped
        def __loadout_arguments
          @__loadout_parent_args
        end
      end

      # __loadout_invoke_each without re-reading options.trace after an action ran.
      module TraceReadOnce
        def __loadout_invoke_each(tasks, task_args, invocation_chain, parent)
          tasks.each do |p|
            next if p.__loadout_finished?
            next if p.__loadout_invoke_fast(task_args, invocation_chain, parent)

            args = parent ? __loadout_arguments : task_args
            p.invoke_with_call_chain(args.new_scope(p.arg_names), invocation_chain)
          end
        end
      end

      module StaleTimestamps
        def memo_timestamps
          current = super or return nil
          @first_seen ||= {}
          current.each { |path, value| @first_seen[path] = value unless @first_seen.key?(path) }
          @first_seen
        end
      end

      module SynthBeforeRules
        def [](*)
          rules = @rules
          @rules = []
          begin
            super
          ensure
            @rules = rules
          end
        end
      end

      module DefineFirstDep
        def define_task(task_class, *args, &block)
          pair = args[0]
          if task_class.equal?(::Rake::FileTask) && args.size == 1 && pair.instance_of?(Hash) &&
             !::Rake::TaskManager.record_task_metadata
            name, deps = pair.first
            return super(task_class, { name => Array(deps).first(1) }, &block)
          end
          super
        end
      end

      case MODE
      when "define_first_dep"
        ::Rake::Application.prepend(DefineFirstDep)
      when "direct_first_only"
        ::Rake::Task.prepend(DirectFirstOnly)
      when "leaf_skips_execute", "fast_skips_execute"
        ::Rake::Task.prepend(LeafSkipsExecute)
      when "fast_args_unscoped"
        ::Rake::Task.prepend(FastArgsUnscoped)
      when "trace_read_once"
        ::Rake::Task.prepend(TraceReadOnce)
      when "stale_timestamps"
        Loadout::Rake.const_get(:FileTaskPatch)::OutOfDate.singleton_class.prepend(StaleTimestamps)
      when "synth_before_rules"
        ::Rake::Application.prepend(SynthBeforeRules)
      when "never_invalidate", "own_path_only"
        RUN.singleton_class.send(:define_method, :action_started) {}
        RUN.singleton_class.send(:define_method, :action_finished) {}
        ::Rake::Task.prepend(OwnPathOnly) if MODE == "own_path_only"
      when "trusted_in_actions"
        RUN.singleton_class.send(:define_method, :action_started) {}
      when "enoent_as_fresh", "second_resolution"
        original = RUN.method(:mtime)
        RUN.singleton_class.send(:define_method, :mtime) do |path|
          value = original.call(path)
          broken = if MODE == "enoent_as_fresh"
                     value.equal?(:enoent) ? Time.now : value
                   else
                     value.is_a?(Time) ? Time.at(value.to_i) : value
                   end
          # Readers of the memo itself (out_of_date?'s direct timestamps) see the bug too.
          stats = RUN.stats
          stats[path] = broken if stats&.key?(path)
          broken
        end
      when "basename_key"
        RUN.singleton_class.send(:define_method, :mtime) do |path|
          stats = RUN.stats or next nil
          stats[File.basename(path)] ||= begin
            File.mtime(path)
          rescue Errno::ENOENT
            :enoent
          end
        end
      else
        raise ArgumentError, "LOADOUT_RAKE_BREAK: unknown mode #{MODE.inspect}"
      end
    end
  end
end

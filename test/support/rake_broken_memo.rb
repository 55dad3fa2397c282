# frozen_string_literal: true

# Loaded only into rake subprocesses started by the rake differential tests (never by
# lib/loadout): injects one deliberate bug into loadout/rake's memo, chosen by
# LOADOUT_RAKE_BREAK, so each scenario can prove it detects a wrong memo.
#
#   never_invalidate    executing a task never drops remembered stats
#   own_path_only       executing a file task drops only its own path (misses side outputs)
#   enoent_as_fresh     a missing file is reported as existing and brand new
#   basename_key        stats are remembered by basename (two paths share one entry)
#   second_resolution   mtimes are truncated to whole seconds
#   direct_first_only   out_of_date?'s direct walk sees only the first prerequisite
#   leaf_skips_execute  invoking a not-yet-invoked leaf prerequisite never runs its action
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
          tasks = super
          tasks && tasks.first(1)
        end
      end

      module LeafSkipsExecute
        def execute(*)
          super unless caller_locations(1, 1).first.label.include?("__loadout_invoke_leaf")
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
      when "leaf_skips_execute"
        ::Rake::Task.prepend(LeafSkipsExecute)
      when "never_invalidate", "own_path_only"
        RUN.singleton_class.send(:define_method, :changed!) {}
        ::Rake::Task.prepend(OwnPathOnly) if MODE == "own_path_only"
      when "enoent_as_fresh", "second_resolution"
        original = RUN.method(:mtime)
        RUN.singleton_class.send(:define_method, :mtime) do |path|
          value = original.call(path)
          if MODE == "enoent_as_fresh"
            value.equal?(:enoent) ? Time.now : value
          else
            value.is_a?(Time) ? Time.at(value.to_i) : value
          end
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

# frozen_string_literal: true

module Loadout
  module RakeMemo
    # The modules prepended to Rake's classes. Each wraps a stock method (its part, then super),
    # except the methods that stat: they are the stock method with the stat read from the run's
    # memo (Run.mtime: a Time, or false for a missing file), and call super when there is none
    # (no memo, or an errno stock raises), so outcomes and exceptions stay stock's.
    module Hooks # :nodoc:
      # Rake::Task: the outermost invoke is a run; execute is an action.
      module Task
        def invoke(*)
          Run.enter
          super
        ensure
          Run.leave
        end

        def execute(*)
          Run.action_started
          super
        ensure
          Run.action_finished
        end
      end

      # Rake::FileTask#timestamp: `File.exist?(name) ? File.mtime(name) : LATE` before 13.1, the
      # same with File.mtime rescuing ENOENT from 13.1 (ruby/rake#393).
      module FileTask
        def timestamp
          stamp = Run.mtime(name)
          stamp.nil? ? super : stamp || Rake::LATE
        end
      end

      # FileTask#needed? before 13.1: `!File.exist?(name) || out_of_date?(timestamp) || build_all`.
      module FileTaskExistCheck
        def needed?
          stamp = Run.mtime(name)
          stamp.nil? ? super : !stamp || out_of_date?(timestamp) || application.options.build_all
        end
      end

      # FileTask#needed? from 13.1: `out_of_date?(File.mtime(name)) || build_all`, true on ENOENT.
      module FileTaskMtimeRescue
        def needed?
          stamp = Run.mtime(name)
          stamp.nil? ? super : !stamp || out_of_date?(stamp) || application.options.build_all
        rescue Errno::ENOENT
          true
        end
      end

      # Rake::FileCreationTask#needed? is `!File.exist?(name)` in every supported version.
      module FileCreationTask
        def needed?
          stamp = Run.mtime(name)
          stamp.nil? ? super : !stamp
        end
      end

      # Rake::Application (its TaskManager methods).
      module Application
        # Stock: `return nil unless File.exist?(task_name); define_task(Rake::FileTask, task_name)`
        # in every supported version. The memo's stat then serves the new task's timestamp too.
        def synthesize_file_task(task_name)
          stamp = Run.mtime(task_name)
          return super if stamp.nil?

          define_task(Rake::FileTask, task_name) if stamp
        end

        # Stock resolves each prerequisite name again for invoke_prerequisites, for
        # all_prerequisite_tasks and for out_of_date?, each time a regexp match or two and a walk
        # of the scopes. A plain table hit is kept (see Run); names with lookup's scope escapes
        # ("rake:", "^") and classes with a lookup of their own are left to stock.
        def [](task_name, scopes = nil)
          cache = Run.lookups(self) or return super
          name = task_name.to_s
          scope = scopes || current_scope
          task = cache[scope]&.[](name) and return task
          return super if name.include?("rake:") || name.include?("^") || !Hooks.stock_lookup?(self.class)

          Run.remember(cache, scope, name) { super }
        end

        def intern(task_class, task_name)
          super
        ensure
          Run.task_added(self, task_name.to_s)
        end

        def clear
          super
        ensure
          Run.task_added(self, nil)
        end
      end

      # Rake::Backtrace's singleton: "rake aborted!" backtraces hide rake's frames; the frames of
      # these hooks sit between rake's, so they are hidden too, as under stock Rake.
      module Backtrace
        DIR = "#{File.expand_path(__dir__)}/"

        def collapse(backtrace)
          super(backtrace.reject { |line| line.start_with?(DIR) })
        end
      end

      @stock_lookup = {}.compare_by_identity
      # True when +klass+ keeps TaskManager's lookup, whose answers change only with the table.
      def self.stock_lookup?(klass) #: (Class) -> bool
        @stock_lookup.fetch(klass) do
          @stock_lookup[klass] = %i[lookup lookup_in_scope].all? do |m|
            klass.instance_method(m).owner.equal?(Rake::TaskManager)
          end
        end
      end
    end
    private_constant :Hooks
  end
end

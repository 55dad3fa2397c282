# frozen_string_literal: true

module Loadout
  module RakeMemo
    # What one Rake run remembers, from the outermost Task#invoke until it returns, and only while
    # no task action runs in any thread (outside that window the hooks are stock Rake, so -T, -P
    # and Rakefile code see no memo): stats (path -> mtime in nanoseconds, or :enoent) and
    # lookups (application -> scope -> name -> TaskManager#[]'s result).
    #
    # An action may write any file (a generator's side outputs), change the task table, or change
    # a file and then invoke a task that depends on it (reenable + invoke): the memo is dropped
    # when an action starts and begun anew once none runs (differential tests prove narrower
    # rules wrong). Outside actions only a rule or a synthesized file adds a task (intern); since
    # lookup tries "outer:inner:name", "inner:name", then "name", that drops the lookups of the
    # new name and of each of its ":"-suffixes, and a result computed meanwhile is not kept.
    # Threads: a value computed from a dropped memo lands in that dropped Hash, which nobody
    # reads. Writes take the lock; reads take it off CRuby only (the GVL makes a read atomic).
    module Run # :nodoc:
      LOCK_FREE_READS = RUBY_ENGINE == "ruby"

      @lock = Mutex.new
      @depth = 0              # Task#invoke calls in flight (nested, or in other threads)
      @acting = 0             # task actions running now
      @stats = @lookups = nil # Hashes while there is a memo
      @table_gen = 0          # bumped whenever a task table gains a task or is cleared

      class << self
        def enter #: () -> void
          @lock.synchronize { fresh if (@depth += 1) == 1 }
        end

        def leave #: () -> void
          @lock.synchronize { @stats = @lookups = nil if (@depth -= 1).zero? }
        end

        def action_started #: () -> void
          @lock.synchronize do
            @acting += 1
            @stats = @lookups = nil
          end
        end

        def action_finished #: () -> void
          @lock.synchronize do
            @acting -= 1
            fresh
          end
        end

        # File.mtime(path) through the memo: a Time, false for ENOENT, or nil without a memo or on
        # another errno (the caller runs stock code, which does what stock does). Times are kept as
        # nanoseconds and made anew, as stock does: on Ruby 3.1 a Time has no write barrier, so
        # Times held by the memo are re-marked by every minor GC and force major ones.
        def mtime(path) #: (String) -> (Time | false | nil)
          stats = @stats or return nil
          value = LOCK_FREE_READS ? stats[path] : @lock.synchronize { stats[path] }
          return value.is_a?(Integer) && Time.at(0, value, :nsec) if value

          value = begin
            (time = File.mtime(path)).tv_sec * 1_000_000_000 + time.tv_nsec
          rescue Errno::ENOENT
            :enoent
          rescue SystemCallError
            return nil
          end
          @lock.synchronize { stats[path] = value }
          time || false
        end

        # { scope => { name => task } } of +app+, nil without a memo.
        def lookups(app) #: (untyped) -> Hash[untyped, Hash[String, untyped]]?
          lookups = @lookups or return nil
          (LOCK_FREE_READS && lookups[app]) || @lock.synchronize { lookups[app] ||= {}.compare_by_identity }
        end

        # The block's TaskManager#[] result, kept unless a task was added while it ran.
        def remember(cache, scope, name) #: (Hash, untyped, String) { () -> untyped } -> untyped
          gen = @table_gen
          task = yield
          @lock.synchronize { (cache[scope] ||= {})[name] = task if @table_gen == gen }
          task
        end

        # +app+ interned +name+ (nil: dropped every task).
        def task_added(app, name) #: (untyped, String?) -> void
          @lock.synchronize do
            @table_gen += 1
            next @lookups&.delete(app) unless name

            @lookups&.[](app)&.each_value do |by_name|
              by_name.delete(name)
              at = 0
              by_name.delete(name[at..]) while (at = name.index(":", at)&.succ)
            end
          end
        end

        private

        # Under @lock: a new memo, when in a run and no action runs.
        def fresh
          @stats, @lookups = {}, {}.compare_by_identity if @depth.positive? && @acting.zero?
        end
      end
    end
    private_constant :Run
  end
end

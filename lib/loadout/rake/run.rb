# frozen_string_literal: true

module Loadout
  module Rake
    # The state of one Rake run: from the outermost Task#invoke until it returns. Outside a run
    # nothing is remembered and every patched method behaves exactly like stock Rake (so -T, -P,
    # and Rakefile code calling needed? at load time never see a memo).
    #
    # Two things are remembered during a run:
    # - stats: path -> File.mtime result (a Time, :enoent, or :error for any other errno), one
    #   stat per path;
    # - per application, TaskManager#[] results: { scope => { name => task } }.
    #
    # Invalidation. Any task action may write any file, define tasks or delete them from the
    # table, so every Task#execute starts a new epoch (empty stat memo, empty lookup caches) and
    # ends one. While any action runs (in any thread) there is no stat memo at all: an action may
    # change a file and then invoke a task that depends on it (the reenable/invoke idiom), and
    # that nested invoke must see the file as it is now, as stock Rake does.
    # A newly interned task X only changes lookups whose candidate names include X, that is names
    # equal to X or to a ":"-suffix of X, so only those cache entries are dropped.
    #
    # Threads (multitask, -j). Reads are lock-free Hash lookups (atomic under CRuby's GVL); every
    # write happens under one Mutex and only if nothing was invalidated since the value was
    # computed (epoch / table generation check), so a stat taken before a task rewrote a file is
    # never stored after that task's invalidation.
    module Run # :nodoc:
      @lock = Mutex.new
      @depth = 0        # nested/concurrent Task#invoke calls in flight
      @epoch = 0        # bumped on run start/end and on every execute
      @table_gen = 0    # bumped whenever any task table gains a task or is cleared
      @clear_gen = 0    # bumped whenever any task table is cleared
      @drop_gen = 0     # bumped whenever a cached lookup may have been dropped (not on new epochs)
      @acting = 0       # task actions (Task#execute) running now, in any thread
      @stats = nil      # Hash while a run is active and no action runs, nil otherwise
      @lookups = nil    # { application => lookup cache } while a run is active
      @enabled = true   # false once someone redefines a patched method after us

      # CRuby's GVL makes a Hash read atomic against a concurrent write; elsewhere, lock reads too.
      LOCK_FREE_READS = RUBY_ENGINE == "ruby"

      class << self
        attr_reader :epoch, :table_gen, :clear_gen, :drop_gen

        # Returns the stat memo of the active run, nil outside a run (or once disabled).
        def stats #: () -> Hash[String, untyped]?
          @stats
        end

        def enter #: () -> void
          @lock.synchronize do
            @depth += 1
            if @depth == 1 && @enabled
              new_epoch
            end
          end
        end

        def leave #: () -> void
          @lock.synchronize do
            @depth -= 1
            if @depth <= 0
              @depth = 0
              @epoch += 1
              @stats = nil
              @lookups = nil
            end
          end
        end

        # An action starts: forget everything, and remember no stat until every action returns.
        # (@lookups is non-nil exactly while a run is active.)
        def action_started #: () -> void
          @lock.synchronize do
            @acting += 1
            new_epoch if @lookups
          end
        end

        # An action returned (or raised): files and the task table may have changed.
        def action_finished #: () -> void
          @lock.synchronize do
            @acting -= 1 if @acting.positive?
            new_epoch if @lookups
          end
        end

        # Turns the memo off for good (stock behaviour from now on). Idempotent.
        def disable! #: () -> void
          @lock.synchronize do
            @enabled = false
            @epoch += 1
            @stats = nil
            @lookups = nil
          end
        end

        def enabled?
          @enabled
        end

        # File.mtime(path) through the memo: a Time, :enoent or :error (any other errno: callers
        # then fall back to stock code so the same exception is raised). nil outside a run.
        def mtime(path) #: (String) -> (Time | Symbol | nil)
          stats = @stats or return nil
          hit = LOCK_FREE_READS ? stats[path] : @lock.synchronize { stats[path] }
          return hit if hit

          epoch = @epoch
          value = begin
            File.mtime(path)
          rescue Errno::ENOENT
            :enoent
          rescue SystemCallError
            :error
          end
          # (lock/unlock rather than synchronize: this runs for every path, and a block costs more)
          @lock.lock
          begin
            stats[path] = value if @epoch == epoch
          ensure
            @lock.unlock
          end
          value
        end

        # The TaskManager#[] cache of +app+ for this epoch: { scope => { name => task } }, scopes
        # compared by identity (a scope object is shared by every task defined in one namespace
        # block); nil outside a run.
        def lookup_cache(app) #: (untyped) -> Hash[untyped, Hash[String, untyped]]?
          lookups = @lookups or return nil
          lookups[app] || @lock.synchronize { @lookups && (@lookups[app] ||= {}.compare_by_identity) }
        end

        # The cached TaskManager#[] results of +app+ for +scope+: { name => task }, or nil.
        def lookups_for(app, scope) #: (untyped, untyped) -> Hash[String, untyped]?
          lookups = @lookups or return nil
          cache = lookups[app] or return nil
          cache[scope]
        end

        # Stores one TaskManager#[] result unless the table changed while it was computed.
        def remember(cache, scope, name, task, table_gen, epoch) #: (Hash, untyped, String, untyped, Integer, Integer) -> void
          @lock.lock
          begin
            (cache[scope] ||= {})[name] = task if @table_gen == table_gen && @epoch == epoch
          ensure
            @lock.unlock
          end
        end

        # Stores a top-level-scope result that stock lookup confirmed, unless a table was cleared
        # (or the epoch ended) since the call started.
        def remember_top_level(cache, scope, name, task, clear_gen, epoch) #: (Hash, untyped, String, untyped, Integer, Integer) -> void
          @lock.lock
          begin
            (cache[scope] ||= {})[name] = task if @clear_gen == clear_gen && @epoch == epoch
          ensure
            @lock.unlock
          end
        end

        # +app+ interned +name+: drop the cached lookups it could shadow, those of +name+ itself and
        # of every ":"-suffix of it (lookup tries "outer:inner:name", "inner:name", then "name").
        def task_added(app, name) #: (untyped, String) -> void
          @lock.synchronize do
            @table_gen += 1
            cache = @lookups && @lookups[app] or next

            cache.each_value do |by_name|
              @drop_gen += 1 if by_name.delete(name)
              at = 0
              while (at = name.index(":", at))
                at += 1
                @drop_gen += 1 if by_name.delete(name[at..-1])
              end
            end
          end
        end

        # +app+ dropped its tasks: forget everything about it.
        def table_cleared(app) #: (untyped) -> void
          @lock.synchronize do
            @table_gen += 1
            @clear_gen += 1
            @drop_gen += 1
            @lookups&.delete(app)
          end
        end

        private

        # Called under @lock: forget every stat and lookup; stats are memoized again only when no
        # action is running.
        def new_epoch
          @epoch += 1
          @stats = @acting.zero? ? {} : nil
          @lookups = {}.compare_by_identity
        end
      end
    end
    private_constant :Run
  end
end

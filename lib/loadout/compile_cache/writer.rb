# frozen_string_literal: true

require "rbconfig"

module Loadout
  module CompileCache
    # Compiles this boot's ISeq misses after the program is done, so a first boot costs what a
    # plain Ruby boot costs: on a miss, Ruby compiles the file itself (exactly as without
    # loadout) and the path is queued here.
    #
    # - :background (default): at exit, write the queue to a temp file and spawn a fresh Ruby
    #   (CompileCache::Worker) that compiles it into its own handle on the same store. A fresh
    #   process rather than a fork: a forked child shares the exiting parent's heap copy-on-write,
    #   so the parent's teardown would pay a page copy for every page it touches; it would also
    #   run the application's fork hooks. The worker's stdio is /dev/null, so nothing waiting on
    #   the parent's pipes waits for it.
    # - :exit: compile in the exiting process (also the fallback when the store has no path).
    #
    # The at_exit hook is registered on the first miss, so it runs before the hooks registered
    # when loadout was set up (Ruby runs at_exit hooks last-in first-out), while the store is open.
    class Writer # :nodoc:
      LIB = File.expand_path("../..", __dir__)

      attr_reader :mode, :jobs

      def initialize(store, mode, counters)
        @store = store
        @counters = counters
        @mode = mode
        @jobs = {}
        @hooked = false
      end

      # Queues +path+ to be compiled into +key+ with the given compile options.
      def enqueue(path, key, options) #: (String, String, Hash[Symbol, untyped]) -> void
        return if @jobs.key?(key)

        @jobs[key] = [path, options]
        return if @hooked

        @hooked = true
        at_exit { run }
      end

      # Compiles every queued job (in a worker process in :background mode).
      def run #: () -> void
        return if @jobs.empty?

        jobs = @jobs
        @jobs = {}
        if @mode == :background && @store.respond_to?(:path) && @store.path
          spawn_worker(jobs)
        else
          compile_all(jobs)
        end
      rescue StandardError => e
        CompileCache.internal_error(:iseq, nil, e)
      end

      # Compiles +jobs+ ({ key => [path, options] }) into +store+; returns how many were stored.
      def self.compile_into(store, jobs) #: (untyped, Hash[String, [String, Hash[Symbol, untyped]]]) -> Integer
        jobs.count do |key, (path, options)|
          value = ISeq.build(path, options)
          store.put(key, value) if value
          value
        end
      end

      private

      def compile_all(jobs)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        @counters.add(:iseq, :compiles, Writer.compile_into(@store, jobs))
        @counters.add(:iseq, :compile_ns, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
      end

      # The job file sits beside the store: that directory is known to be writable.
      def spawn_worker(jobs)
        file = "#{@store.path}.compile-#{Process.pid}-#{rand(1 << 32).to_s(16)}.jobs"
        File.binwrite(file, Marshal.dump([@store.path, jobs]))
        # LOADOUT_DISABLE: a RUBYOPT=-rloadout/setup must not set loadout up inside the worker.
        pid = Process.spawn({ "LOADOUT_DISABLE" => "1" }, RbConfig.ruby, "-I", LIB, "-r", "loadout/compile_cache/worker", "-e",
                            "Loadout::CompileCache::Worker.run(ARGV[0])", file,
                            in: File::NULL, out: File::NULL, err: File::NULL)
        Process.detach(pid)
      rescue SystemCallError, NotImplementedError
        File.delete(file) if file && File.exist?(file)
        nil # no process for it now: the misses stay misses until a later boot
      end
    end
  end
end

# frozen_string_literal: true

require "rbconfig"
# Loaded with the writer, not at exit: a file required then would go through the ISeq handler
# and count as one of the application's misses.
require_relative "../quiet_spawn"
require_relative "../trust"

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
    #   run the application's fork hooks. Started with posix_spawn (QuietSpawn), not a fork+exec,
    #   which would copy the parent's page tables first. The worker holds nothing of the app's
    #   (QuietSpawn: stdio on /dev/null, no other descriptor, its own environment, cwd "/"), so
    #   nothing waiting on the parent's pipes waits for it, and has a time budget (Worker).
    # - :exit: compile in the exiting process (also the fallback when the store has no path).
    #
    # The at_exit hook is registered on the first miss, so it runs before the hooks registered
    # when loadout was set up (Ruby runs at_exit hooks last-in first-out), while the store is open.
    #
    # The queue holds paths grouped by variant (one group per compile-option set), not store
    # keys: keys are built where the files are compiled, so a miss costs one Hash insert, and
    # the job file (JobFile: plain lines, parsed strictly) is one line per path.
    class Writer # :nodoc:
      LIB = File.expand_path("../..", __dir__)
      JOB_HEADER = "loadout-compile-jobs 1" # JobFile::HEADER

      attr_reader :mode

      # +key+: the Key that names entries (its roots go to the worker).
      def initialize(store, mode, counters, key)
        @store = store
        @counters = counters
        @mode = mode
        @key = key
        @groups = {}
        @self_job = nil
        @hooked = false
        @finished = nil
      end

      # Asks for loadout's own +files+ to be compiled with +options+ into the self cache file at
      # +path+ (see SelfCache), along with this boot's misses.
      #: (String, Array[String], Hash[Symbol, untyped]) -> void
      def self_cache(path, files, options)
        @self_job = [path, files, options]
        hook_exit
      end

      # Called after #run has written (or handed off) the queue; the ISeq handler uses it to
      # leave its cold-store mode.
      def on_finish(&block)
        @finished = block
      end

      # Queues +path+ to be compiled with +options+ into the entry of +variant+.
      #: (String, String, Hash[Symbol, untyped]) -> void
      def enqueue(path, variant, options)
        paths = (@groups[variant] ||= [options, {}])[1]
        return if paths.key?(path)

        paths[path] = true
        hook_exit
      end

      # Compiles every queued job (in a worker process in :background mode).
      def run #: () -> void
        return if @groups.empty? && @self_job.nil?

        groups = @groups.map { |variant, (options, paths)| [variant, options, paths.keys] }
        self_job = @self_job
        @groups = {}
        @self_job = nil
        if @mode == :background && @store.respond_to?(:path) && @store.path
          spawn_worker(groups, self_job)
        else
          compile_all(groups)
          Writer.write_self_cache(*self_job, shared_cache?) if self_job
        end
        @finished&.call
      rescue StandardError => e
        CompileCache.internal_error(:iseq, nil, e)
      end

      # Compiles +groups+ ([[variant, options, [path, ...]], ...]) into +store+ under the keys
      # +key+ (a Key) gives them; returns how many were stored. With a +deadline+ (a monotonic
      # clock value), stops starting files after it.
      #: (untyped, Key, Array[[String, Hash[Symbol, untyped], Array[String]]], ?Float?) -> Integer
      def self.compile_into(store, key, groups, deadline = nil)
        stored = 0
        groups.each do |variant, options, paths|
          paths.each do |path|
            return stored if deadline && Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

            value = ISeq.build(path, options) or next
            store.put(key.for("i", variant, path), value)
            stored += 1
          end
        end
        stored
      end

      # The text of a job file (the format is documented in CompileCache::JobFile), or nil when an
      # option value has no place in it (only true, false and Integers are compile options).
      #: (String, bool, Array[String], Array[untyped], Array[untyped]?) -> String?
      def self.job_text(store_path, shared, roots, groups, self_job)
        lines = [JOB_HEADER, "store #{job_string(store_path)}", "shared #{shared ? 1 : 0}"]
        roots.each { |root| lines << "root #{job_string(root)}" }
        sections = groups.map { |variant, options, paths| ["group", variant, options, paths] }
        sections << ["self", self_job[0], self_job[2], self_job[1]] if self_job
        sections.each do |tag, name, options, paths|
          lines << "#{tag} #{job_string(name)}"
          options.each do |option, value|
            known = value == true || value == false || (value.is_a?(Integer) && value.abs < 1_000_000_000)
            return nil unless known && option.is_a?(Symbol) && option.match?(/\A[a-z_]+\z/)

            lines << "option #{option} #{value}"
          end
          paths.each { |path| lines << "file #{job_string(path)}" }
        end
        "#{lines.join("\n")}\nend\n"
      end

      def self.job_string(string)
        "#{string.encoding.name}:#{string.b.gsub(%r{[^A-Za-z0-9_./~+,=@-]}n) { |c| format("%%%02X", c.ord) }}"
      end

      # Writes the self cache file +path+ for loadout's +files+ (atomically: a reader sees the old
      # file or the new one). Unreadable files are left out.
      #: (String, Array[String], Hash[Symbol, untyped]) -> void
      def self.write_self_cache(path, files, options, shared = false)
        entries = files.filter_map { |file| (entry = ISeq.build(file, options)) && [file, entry] }
        Trust.write_atomically(path, SelfCache.dump(entries), shared)
      end

      private

      def shared_cache?
        @store.respond_to?(:trust_shared_cache?) && @store.trust_shared_cache?
      end

      def hook_exit
        return if @hooked

        @hooked = true
        at_exit { run }
      end

      def compile_all(groups)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        @counters.add(:iseq, :compiles, Writer.compile_into(@store, @key, groups))
        @counters.add(:iseq, :compile_ns, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
      end

      # The job file sits beside the store (a directory that passed the trust rule), created
      # exclusively under a random name. The worker runs without RUBYOPT and RubyGems (it needs
      # neither), with LOADOUT_DISABLE so nothing could set loadout up inside it, on this
      # process's backend.
      def spawn_worker(groups, self_job)
        shared = shared_cache?
        job = Writer.job_text(@store.path, shared, @key.roots, groups, self_job) or return
        file = Trust.create_exclusive("#{@store.path}.compile-", shared, suffix: ".jobs") { |io| io.write(job) }
        env = QuietSpawn.environment("LOADOUT_DISABLE" => "1", "LOADOUT_PURE" => BACKEND == :native ? "0" : "1")
        argv = [RbConfig.ruby, "--disable=gems,rubyopt", "-I", LIB, "-r", "loadout/compile_cache/worker",
                "-e", "Loadout::CompileCache::Worker.run(ARGV[0])", file]
        pid = QuietSpawn.call(env, argv)
        Process.detach(pid)
      rescue SystemCallError, IOError, NotImplementedError
        Trust.unlink_quietly(file) if file
        nil # no process for it now: the misses stay misses until a later boot
      end
    end
  end
end

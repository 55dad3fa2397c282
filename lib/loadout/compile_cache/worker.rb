# frozen_string_literal: true

require "loadout"
require "loadout/store"
require "loadout/compile_cache"
require_relative "../trust"
require_relative "job_file"

module Loadout
  module CompileCache
    # The background compiler spawned by Writer (through QuietSpawn: its own environment, cwd "/",
    # no descriptor of the app's). It reads its job file (JobFile, checked by the trust rule and
    # removed at once), compiles each file into the store under the key Key.new(roots) gives it,
    # writes the self cache if asked, and exits. It never prints and never raises out: a failed
    # job is a future miss.
    #
    # Time budget: no file is started after BUDGET seconds, and the process exits after
    # HARD_LIMIT seconds whatever it is doing (what was flushed by then is kept; the rest stays
    # a miss that a later boot queues again). Sources are read only when they are regular files
    # (opened with O_NONBLOCK and checked with fstat: a FIFO in the queue never blocks it).
    module Worker # :nodoc:
      BUDGET = 300
      HARD_LIMIT = 360
      FLUSH_EVERY = 200 # files per flush: work done before a hard stop is kept
      STALE_JOB_SECONDS = 3600 # job files older than this were never picked up (a killed worker)

      class << self
        #: (String, ?budget: Numeric, ?hard_limit: Numeric) -> void
        def run(job_file, budget: BUDGET, hard_limit: HARD_LIMIT)
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + budget
          Thread.new do
            sleep hard_limit
            exit!(1)
          end
          lower_priority
          job = read_job(job_file) or return
          # The job names the store; its directory must still pass the rule it passed at boot.
          return if Trust.walk(File.dirname(job.store_path), job.roots.first, job.shared)

          compile(job, deadline)
          Writer.write_self_cache(*job.self_job, job.shared) if job.self_job && !late?(deadline)
        rescue StandardError, ScriptError
          nil
        ensure
          Trust.unlink_quietly(job_file)
          remove_stale_jobs(job&.store_path)
        end

        private

        # Background work: let the next boot (often started right away) have the CPU first.
        def lower_priority
          Process.setpriority(Process::PRIO_PROCESS, 0, 10)
        rescue StandardError
          nil
        end

        # The Job in +job_file+ (removed before it is parsed), or nil when it fails the trust rule
        # or the strict parse.
        def read_job(job_file)
          text = begin
            Trust.read(job_file, false)
          rescue Trust::Refused, SystemCallError
            nil
          ensure
            Trust.unlink_quietly(job_file)
          end
          text && JobFile.parse(text)
        end

        def compile(job, deadline)
          return if job.groups.empty?

          store = Store.open(job.store_path, fail_safe: true, defer_writes: true, trust_shared_cache: job.shared)
          key = Key.new(job.roots)
          job.groups.each do |variant, options, paths|
            paths.each_slice(FLUSH_EVERY) do |slice|
              Writer.compile_into(store, key, [[variant, options, slice]], deadline)
              store.flush
            end
          end
        ensure
          store&.close
        end

        def late?(deadline)
          Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        end

        def remove_stale_jobs(store_path)
          return unless store_path

          dir = File.dirname(store_path)
          prefix = "#{File.basename(store_path)}.compile-"
          Dir.children(dir).each do |name|
            next unless name.start_with?(prefix) && name.end_with?(".jobs")

            path = File.join(dir, name)
            Trust.unlink_quietly(path) if (File.lstat(path).mtime < Time.now - STALE_JOB_SECONDS rescue false)
          end
        rescue SystemCallError
          nil
        end
      end
    end
  end
end

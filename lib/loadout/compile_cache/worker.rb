# frozen_string_literal: true

require "loadout"
require "loadout/store"
require "loadout/compile_cache"
require_relative "../binary_file"

module Loadout
  module CompileCache
    # The background compiler spawned by Writer: reads a job file ([store path, roots, [[variant,
    # compile options, [path, ...]], ...], self cache job or nil]), compiles each file into the
    # store under the key Key.new(roots) gives it, writes the self cache if asked, and exits. It
    # never prints and never raises out: a failed job is a future miss.
    module Worker # :nodoc:
      def self.run(job_file) #: (String) -> void
        # Background work: let the next boot (often started right away) have the CPU first.
        begin
          Process.setpriority(Process::PRIO_PROCESS, 0, 10)
        rescue StandardError
          nil
        end
        # The job file is ours from here: deleted whatever happens next (a torn one included).
        begin
          job = File.binread(job_file)
        ensure
          BinaryFile.unlink_quietly(job_file)
        end
        # rubocop:disable Security/MarshalLoad -- written by our parent
        store_path, roots, groups, self_job = Marshal.load(job)
        # rubocop:enable Security/MarshalLoad
        unless groups.empty?
          store = Store.open(store_path, fail_safe: true, defer_writes: true)
          store.evictor = Eviction.new(roots: roots) # the sweep its writes may trigger (see Boot)
          Writer.compile_into(store, Key.new(roots), groups)
          store.close
        end
        Writer.write_self_cache(*self_job) if self_job
      rescue StandardError, ScriptError
        nil
      end
    end
  end
end

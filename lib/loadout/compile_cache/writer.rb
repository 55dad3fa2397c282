# frozen_string_literal: true

require_relative "capture"

module Loadout
  module CompileCache
    # What happens to this boot's ISeq misses (Ruby compiled those files itself, exactly as
    # without loadout):
    #
    # - :capture (default): Capture stores the very ISeqs Ruby compiled (their binary), flushed
    #   with the boot's other writes. Nothing is compiled twice, no process is started.
    # - :exit: compile them again at exit in this process (ISeq.build: compile_file, labels
    #   rewritten to Ruby's own), for callers that compile files they do not run.
    #
    # loadout's own files are compiled at exit by SelfCache, through #at_run.
    #
    # The Writer registers no at_exit hook of its own: #run is called by whoever owns the boot's
    # exit (Boot.finish, first in its ordered sequence, while the store is open;
    # CompileCache.finish! for direct users of CompileCache.install!). Two hooks ordered by
    # registration time dropped every :exit compile when the first miss came before setup
    # registered its own.
    class Writer # :nodoc:
      MODES = %i[capture exit].freeze

      attr_reader :mode

      # +key+: the Key that names entries.
      def initialize(store, mode, counters, key)
        @store = store
        @counters = counters
        @mode = mode
        @key = key
        @groups = {}
        @capture = mode == :capture ? Capture.new(store, key, counters) : nil
        @jobs = []
        @finished = nil
        @digest = Digest # (a miss names no constant: see Capture#initialize)
      end

      # Runs +block+ once, at the end of #run (after this process's compiles): SelfCache writes
      # loadout's own compiled files this way.
      def at_run(&block)
        @jobs << block
      end

      # Called after #run; the ISeq handler uses it to leave its cold-store mode.
      def on_finish(&block)
        @finished = block
      end

      # A miss of +path+, to be stored under +variant+ (+options+: the compile options in force;
      # +identity+: the file's stat at the miss).
      #: (String, String, Hash[Symbol, untyped], ?Array[Integer]?) -> void
      def enqueue(path, variant, options, identity = nil)
        if @capture
          @capture.want(path, variant, identity || @digest.identity(path))
        else
          paths = (@groups[variant] ||= [options, {}])[1]
          return if paths.key?(path)

          paths[path] = true
        end
      end

      # At exit: stops capturing, compiles what :exit mode queued and the self cache job. Runs
      # once per queue: a second call finds nothing to do.
      def run #: () -> void
        @capture&.stop
        groups = @groups.map { |variant, (options, paths)| [variant, options, paths.keys] }
        jobs = @jobs
        @groups = {}
        @jobs = []
        compile_all(groups) unless groups.empty?
        jobs.each(&:call)
        @finished&.call
      rescue StandardError => e
        CompileCache.internal_error(:iseq, nil, e)
      end

      # Compiles +groups+ ([[variant, options, [path, ...]], ...]) into +store+ under the keys
      # +key+ (a Key) gives them; returns how many were stored.
      #: (untyped, Key, Array[[String, Hash[Symbol, untyped], Array[String]]]) -> Integer
      def self.compile_into(store, key, groups)
        groups.sum do |variant, options, paths|
          paths.count do |path|
            value = ISeq.build(path, options)
            store.put(key.for("i", variant, path), value) if value
            value
          end
        end
      end

      private

      def compile_all(groups)
        # compile_file reads in the default external encoding: one that is not ASCII-compatible
        # (an app may set it) cannot read source; the next boot misses them again.
        return unless Encoding.default_external.ascii_compatible?

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        @counters.add(:iseq, :compiles, Writer.compile_into(@store, @key, groups))
        @counters.add(:iseq, :compile_ns, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
      end
    end
  end
end

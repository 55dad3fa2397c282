# frozen_string_literal: true

require_relative "../trust"
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
    # loadout's own files (SelfCache) are compiled at exit when their self cache is missing or
    # stale, once per loadout and Ruby version.
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
        @self_job = nil
        @finished = nil
      end

      # Asks for loadout's own +files+ to be compiled with +options+ into the self cache file at
      # +path+ (see SelfCache), at exit.
      #: (String, Array[String], Hash[Symbol, untyped]) -> void
      def self_cache(path, files, options)
        @self_job = [path, files, options]
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
          @capture.want(path, variant, identity || Digest.identity(path))
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
        self_job = @self_job
        @groups = {}
        @self_job = nil
        compile_all(groups) unless groups.empty?
        Writer.write_self_cache(*self_job, shared_cache?) if self_job
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

      # Writes the self cache file +path+ for loadout's +files+ (atomically: a reader sees the old
      # file or the new one; a failed write leaves no temp file; created exclusively, with the
      # cache's modes, see Trust). Unreadable files are left out.
      #: (String, Array[String], Hash[Symbol, untyped], ?bool) -> void
      def self.write_self_cache(path, files, options, shared = false)
        # compile_file reads in the default external encoding: one that is not ASCII-compatible
        # (an app may set it) cannot read source; a later boot writes the self cache.
        return unless Encoding.default_external.ascii_compatible?

        entries = files.filter_map { |file| (entry = ISeq.build(file, options)) && [file, entry] }
        Trust.write_atomically(path, SelfCache.dump(entries), shared)
      rescue SystemCallError, IOError
        nil # the next boot compiles loadout's files itself and asks again
      end

      private

      def shared_cache?
        @store.respond_to?(:trust_shared_cache?) && @store.trust_shared_cache?
      end

      def compile_all(groups)
        return unless Encoding.default_external.ascii_compatible? # see write_self_cache

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        @counters.add(:iseq, :compiles, Writer.compile_into(@store, @key, groups))
        @counters.add(:iseq, :compile_ns, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
      end
    end
  end
end

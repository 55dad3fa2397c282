# frozen_string_literal: true

require_relative "entry"
require_relative "iseq_binary"
require_relative "../trust"

module Loadout
  module CompileCache
    # Stores the instruction sequences Ruby compiles on a miss, instead of compiling them again.
    #
    # On a miss the ISeq hook returns nil and Ruby compiles the file itself, exactly as without
    # loadout. A TracePoint(:script_compiled), enabled from the first miss, receives that very
    # ISeq (Ruby's own labels and paths, nothing to rewrite) right after the compile and before
    # it runs; its binary (#to_binary, about a third of what compiling costs) goes to the store
    # with the next flush. A cold boot therefore costs plain Ruby plus to_binary, and no process
    # compiles anything a second time.
    #
    # - Exactness: the stored binary must be what the stored digest describes. The file's stat is
    #   taken at the miss, before Ruby reads it; after the compile the file is digested and
    #   stat'ed again, and nothing is stored unless both stats agree (size, mtime, ctime, inode).
    #   A compile that printed a warning for the file is not stored (a cached ISeq would not
    #   print it again); one made without -w is marked VERBOSE_WARNINGS (not served under -w,
    #   where Ruby might warn). Under Coverage nothing is captured (Ruby's compile differs).
    # - Once: several processes booting on one empty cache (parallel test workers) compile the
    #   same files. Each capture is written with Store#claim, under the store's append lock with
    #   every process's writes in view: a process that finds the same source already stored by
    #   another skips its to_binary. Written at once (not deferred to exit), so the others see it.
    class Capture # :nodoc:
      def initialize(store, key, counters)
        @store = store
        @key = key
        @counters = counters
        @pending = {} # path => [variant, identity at the miss]
        @warned = {}
        @tracepoint = nil
        # Each capture names no constant: Ruby 3.1 drops every constant cache whenever a class or
        # module is defined (nearly every file a boot loads), and each lookup after that
        # allocates, once per capture per name.
        @trust = Trust
        @digest = Digest
        @entry = Entry
        @iseq_binary = ISeqBinary
        @clock = Process
        @realtime = Process::CLOCK_REALTIME
        @raw = Entry::RAW
        @verbose_warnings = Entry::VERBOSE_WARNINGS
        @pinned_path = Entry::PINNED_PATH
      end

      # A miss of +path+ under +variant+; +identity+: its stat now (before Ruby reads it), or nil.
      def want(path, variant, identity)
        return unless identity

        @pending[path] = [variant, identity]
        start
      end

      # Stops capturing (at exit, before the store is flushed).
      def stop
        @tracepoint&.disable
        @tracepoint = nil
        @pending.clear
      end

      # Called by the WarningWatch while capturing: a warning Ruby printed for +path+.
      def warned(message)
        return if @pending.empty?

        path = message[/\A(.+?):\d+: warning: /, 1]
        @warned[path] = true if path && @pending.key?(path)
      end

      private

      def start
        return if @tracepoint

        WarningWatch.attach(self)
        @tracepoint = TracePoint.new(:script_compiled) { |tp| compiled(tp) }
        @tracepoint.enable
      end

      def compiled(tp)
        return if tp.eval_script # an eval, not a file

        iseq = tp.instruction_sequence
        path = iseq.path
        variant, before = @pending.delete(path)
        return unless variant

        warned = @warned.delete(path)
        return if warned || coverage_running?

        capture_entry(path, variant, before, iseq)
      rescue StandardError => e
        CompileCache.internal_error(:iseq, path, e)
      end

      def capture_entry(path, variant, before, iseq)
        # A regular file only, opened non-blocking and checked as opened (a FIFO Ruby read from
        # has nothing left to read: reading it again would block the app).
        source = @trust.read_source(path) or return
        after = @digest.identity(path)
        return unless after == before # changed while Ruby compiled it: what it read is unknown

        digest = @digest.xxh64(source)
        paths = [path, iseq.absolute_path.to_s]
        # A path the source spells out cannot be relocated.
        spelled = source.include?(@entry.bytes(paths[0])) || source.include?(@entry.bytes(paths[1]))
        # Every buffer a capture makes is freed as soon as it is written, not at a later GC: a
        # cold boot captures every file, and tens of MB of sources and binaries left to the GC
        # count toward its malloc limit and start extra collections.
        source.clear
        entry = nil
        stored = @store.claim(@key.for("i", variant, path)) do |current|
          # Another process stored the same source (one captured without -w is replaced by a -w one).
          next nil if current && @entry.source_digest(current) == digest &&
                       !($VERBOSE && (@entry.flags_of(current) & @verbose_warnings) != 0)

          entry = entry_for(before, spelled, paths, digest, iseq)
        end
        entry&.clear
        @counters.add(:iseq, :compiles, 1) if stored
      rescue SystemCallError, IOError
        nil
      end

      def entry_for(identity, spelled, paths, digest, iseq)
        binary = iseq.to_binary
        return nil if failed_parse?(iseq, binary)

        flags = @raw
        flags |= @verbose_warnings unless $VERBOSE # compiled without -w: unknown under -w
        flags |= @pinned_path if spelled || @iseq_binary.mentioned_outside_objects?(binary, paths)
        verified = @clock.clock_gettime(@realtime, :nanosecond)
        entry = @entry.dump(flags, identity, verified, digest, binary, path: paths[0], realpath: paths[1])
        binary.clear
        entry
      end

      # A file that does not parse still reaches :script_compiled (Ruby 3.1 compiles an empty body,
      # then raises the parser's SyntaxError): its ISeq spans lines 0 to -1, which no parsed
      # source does. Only tiny ISeqs are looked at (to_a is costly on real ones; a failed parse's
      # binary is 193 bytes plus its path on 3.1; `module A; end` makes 303 plus its path).
      def failed_parse?(iseq, binary)
        return false if binary.bytesize > 320 + iseq.path.bytesize

        location = iseq.to_a[4][:code_location]
        !location.is_a?(Array) || location[2].to_i.negative?
      end

      def coverage_running?
        return false unless defined?(::Coverage)

        ::Coverage.respond_to?(:state) ? ::Coverage.state != :idle : ::Coverage.running?
      end
    end

    # Tells the capturing Capture about warnings Ruby prints (parse warnings come through
    # Warning.warn with "path:line: warning: "), then lets them through unchanged.
    module WarningWatch # :nodoc:
      @capture = nil

      def self.attach(capture)
        @capture = capture
        Warning.singleton_class.prepend(self) unless Warning.singleton_class.include?(self)
      end

      class << self
        attr_reader :capture
      end

      def warn(message, *args, **kw)
        WarningWatch.capture&.warned(message) if message.is_a?(String)
        kw.empty? ? super(message, *args) : super
      end
    end
  end
end

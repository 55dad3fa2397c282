# frozen_string_literal: true

require_relative "entry"
require_relative "iseq_binary"

module Loadout
  module CompileCache
    # Stores the instruction sequences Ruby compiles on this boot's misses, instead of compiling
    # them again: the ISeq handler's miss path.
    #
    # On a miss the handler returns nil and Ruby compiles the file itself, exactly as without
    # loadout. A TracePoint(:script_compiled), enabled from the first miss, receives that very
    # ISeq (Ruby's own labels and paths, nothing to rewrite) right after the compile and before
    # it runs; its binary (#to_binary, about a third of what compiling costs) is written to the
    # store at once with Store#claim. A cold boot therefore costs plain Ruby plus to_binary, and
    # no process compiles anything a second time.
    #
    # - Exactness: the stored binary must be what the stored digest describes. The file's stat is
    #   taken at the miss, before Ruby reads it; after the compile the file is digested and
    #   stat'ed again, and nothing is stored unless both stats agree (size, mtime, ctime, inode).
    # - Ruby's to compile: a file that failed to parse, or whose compile printed a warning at the
    #   default level, gets a negative entry (a cached ISeq would not raise or warn again); one
    #   that warned only under -w gets nothing. One captured without -w is marked
    #   VERBOSE_WARNINGS (not served under -w, where Ruby might warn). Under Coverage nothing is
    #   captured (Ruby's compile differs).
    # - Once: several processes booting on one empty cache (parallel test workers) compile the
    #   same files. Store#claim decides under the store's append lock with every process's writes
    #   in view: a process that finds the same source already stored by another skips its
    #   to_binary. Written at once, not with the boot's deferred writes, so the others see it.
    class Capture # :nodoc:
      def initialize(entries)
        @entries = entries
        @key = entries.key
        @counters = entries.counters
        @pending = {} # path => [variant, identity at the miss]
        @warned = {}
        @tracepoint = nil
        # (hot path, once per file a cold boot compiles: see ARCHITECTURE.md)
        @freshness = Freshness
        @trust = Trust
        @xxh64 = XXH64
        @entry = Entry
        @iseq_binary = ISeqBinary
        @raw = Entry::RAW
        @negative = Entry::NEGATIVE
        @verbose_warnings = Entry::VERBOSE_WARNINGS
        @pinned_path = Entry::PINNED_PATH
      end

      # A miss of +path+, to be stored under +variant+: its stat now, before Ruby reads it.
      def expect(path, variant) #: (String, String) -> void
        identity = @freshness.identity(path) or return

        thread = Thread.current
        settle(thread) unless @pending.empty?
        @pending[path] = [variant, identity, thread]
        start
      end

      # Stops capturing (at exit, before the store is flushed).
      def stop #: () -> void
        settle(nil) unless @pending.empty?
        @tracepoint&.disable
        @tracepoint = nil
        @pending.clear
      end

      # Called by WarningWatch while capturing: a warning Ruby printed.
      def warned(message) #: (String) -> void
        return if @pending.empty?

        path = message[/\A(.+?):\d+: warning: /, 1]
        @warned[path] = $VERBOSE if path && @pending.key?(path)
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
        variant, before, = @pending.delete(path)
        return unless variant
        return if coverage_running?

        # A warning shown at the default level is shown by every compile; one shown only under
        # -w says nothing about the default level.
        warned = @warned.key?(path) ? (@warned.delete(path) ? :verbose : :default) : nil
        capture_entry(path, variant, before, iseq, warned)
      rescue StandardError => e
        CompileCache.__internal_error(:iseq, path, e)
      end

      def capture_entry(path, variant, before, iseq, warned)
        return if warned == :verbose

        # A regular file only, opened non-blocking and checked as opened (a FIFO Ruby read from
        # has nothing left to read: reading it again would block the app).
        source = @trust.read_source(path) or return
        return unless @freshness.identity(path) == before # changed while Ruby compiled it: what it read is unknown

        digest = @xxh64.digest(source)
        paths = [path, iseq.absolute_path.to_s]
        # A path the source spells out cannot be relocated.
        spelled = source.include?(@entry.bytes(paths[0])) || source.include?(@entry.bytes(paths[1]))
        # Every buffer a capture makes is freed as soon as it is written, not at a later GC: a
        # cold boot captures every file, and tens of MB of sources and binaries left to the GC
        # count toward its malloc limit and start extra collections.
        source.clear
        entry = nil
        stored = @entries.claim(@key.for("i", variant, path)) do |current|
          next nil if current && serves?(current, path, digest)

          entry = warned ? negative(before, digest, :compile_warnings) : entry_for(before, spelled, paths, digest, iseq)
        end
        entry&.clear
        @counters.add(:iseq, :compiles, 1) if stored
      rescue SystemCallError, IOError
        nil
      end

      def entry_for(identity, spelled, paths, digest, iseq)
        binary = iseq.to_binary
        return negative(identity, digest, :syntax_error) if failed_parse?(iseq, binary)

        flags = @raw
        flags |= @verbose_warnings unless $VERBOSE # compiled without -w: unknown under -w
        flags |= @pinned_path if spelled || @iseq_binary.mentioned_outside_objects?(binary, paths)
        entry = @entry.dump(flags, identity, @freshness.now_ns, digest, binary, path: paths[0], realpath: paths[1])
        binary.clear
        entry
      end

      # Whether +current+ (stored by another process meanwhile: parallel boots on one cache) serves
      # what this capture would store: intact, the same source, compiled at this path, and not one
      # captured without -w while this process runs with it.
      def serves?(current, path, digest)
        entry = @entry.load(current) or return false
        entry.digest == digest && entry.compiled_at?(path) && !($VERBOSE && (entry.flags & @verbose_warnings) != 0)
      end

      # An entry that tells the next boots to leave the file to Ruby until it changes.
      def negative(identity, digest, reason)
        @entry.dump(@negative, identity, @freshness.now_ns, digest, reason.to_s)
      end

      # Ruby compiles a file right after its miss, on the same thread: a miss of +thread+ (every
      # thread's at exit) still pending was never compiled. That is a file that does not parse on
      # Ruby 3.4+ (Prism raises its SyntaxError before :script_compiled), or one Ruby could not
      # read. A file that does not parse when compiled here gets the negative entry it gets on
      # 3.1-3.3, where its failed parse is captured: the next boots leave it to Ruby without a miss.
      def settle(thread)
        left = @pending.select { |_, (_, _, owner)| thread.nil? || owner.equal?(thread) }
        left.each do |path, (variant, before, _)|
          @pending.delete(path)
          source = @trust.read_source(path) or next
          next unless @freshness.identity(path) == before && parse_fails?(path)

          digest = @xxh64.digest(source)
          source.clear
          next unless @freshness.identity(path) == before # changed meanwhile: what Ruby read is unknown

          stored = @entries.claim(@key.for("i", variant, path)) do |current|
            known = current && @entry.load(current)
            negative(before, digest, :syntax_error) unless known&.negative? && known.digest == digest
          end
          @counters.add(:iseq, :compiles, 1) if stored
        rescue StandardError, ScriptError => e
          CompileCache.__internal_error(:iseq, path, e)
        end
      end

      # Whether +path+ fails to parse; its parse warnings, already shown by Ruby's own compile,
      # are not shown again.
      def parse_fails?(path)
        verbose = $VERBOSE
        $VERBOSE = nil
        RubyVM::InstructionSequence.compile_file(path)
        false
      rescue SyntaxError
        true
      ensure
        $VERBOSE = verbose
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

      # Tells the capturing Capture about warnings Ruby prints (parse warnings come through
      # Warning.warn with "path:line: warning: "), then lets them through unchanged.
      module WarningWatch
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
end

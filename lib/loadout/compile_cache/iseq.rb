# frozen_string_literal: true

require_relative "entry"
# Loaded with this file, not on first use: a file loaded later goes through this handler itself.
require_relative "iseq_binary"
require_relative "writer"
require_relative "lazy_hook"

module Loadout
  module CompileCache
    # The instruction-sequence handler: answers RubyVM::InstructionSequence.load_iseq, which
    # Ruby calls before compiling a file it requires or loads. Returning nil lets Ruby compile.
    #
    # - hit: the stored binary (checked against its digest, then relocated if the checkout
    #   moved) goes through load_from_binary;
    # - miss, stale or corrupt: Ruby compiles, and the Writer stores a binary after the boot;
    # - while Coverage runs, nothing is served (coverage needs Ruby's own compile).
    #
    # Stored binaries are compiled with compile_file and the options in force, then get Ruby's
    # own top-level labels (see ISeqBinary), and are loaded once before being stored.
    module ISeq # :nodoc:
      LETTER = "i"
      TOP_LABEL = "<top (required)>"
      PATH_REPLACEMENT_LIMIT = 4096

      # The prepended hook. When the handler is off it passes through. Defined with a block that
      # holds the handler, so a call per loaded file names no constant (see @lazy_hook below).
      module Hook; end
      handler = self
      Hook.send(:define_method, :load_iseq) do |path|
        handler.fetch(path) || (defined?(super) ? super(path) : nil)
      end

      # Collects warnings while ISeq.build compiles (only on the thread that asked).
      module WarningCapture
        def warn(message, *args, **kw)
          captured = Thread.current[:__loadout_warnings]
          return super unless captured

          captured << message
          nil
        end
      end

      # Keeps the variant in step with RubyVM::InstructionSequence.compile_option=.
      module OptionHook
        def compile_option=(value)
          super.tap { ISeq.options_changed }
        end
      end

      @ctx = nil
      @cold = false
      @hooked = false
      # A hit names no constant: Ruby 3.1 drops every constant cache whenever a class or module
      # is defined, which nearly every file a boot loads does, so each name would be looked up
      # again (and a cache object allocated) on every fetch. They are read once, here.
      @lazy_hook = LazyHook
      @entry = Entry
      @freshness = Freshness
      @string = String
      @loader = RubyVM::InstructionSequence
      @process = Process
      @monotonic = Process::CLOCK_MONOTONIC

      class << self
        def install!(ctx)
          @ctx = ctx
          # An empty store (a first boot, a CI run without a restored cache) answers every
          # lookup with "no": until this process writes entries itself, a fetch skips the key
          # and the lookup and only queues the file, so a cold boot costs what plain Ruby costs.
          @cold = ctx.store.respond_to?(:size) && ctx.store.size.zero? && !ctx.readonly
          ctx.writer.on_finish { @cold = false } if @cold
          options_changed
          return if @hooked

          RubyVM::InstructionSequence.singleton_class.prepend(Hook)
          RubyVM::InstructionSequence.singleton_class.prepend(OptionHook)
          @hooked = true
        end

        def uninstall!
          @ctx = nil
        end

        def options_changed
          @options = RubyVM::InstructionSequence.compile_option
          ctx = @ctx or return
          @variant = ctx.key.variant(:iseq, @options.sort_by { |k, _| k.to_s }.inspect)
        end

        # The ISeq for +path+ from the cache, or nil to let Ruby compile it.
        def fetch(path) #: (String) -> RubyVM::InstructionSequence?
          ctx = @ctx or return nil
          @lazy_hook.poll if @lazy_hook.waiting?
          return skip(ctx, path, :coverage) if coverage_running?
          return miss(ctx, :miss, path) if @cold

          key = ctx.key.for("i", @variant, path) # LETTER
          blob = ctx.store.get(key)
          return miss(ctx, :miss, path) unless blob

          ctx.counters.add(:iseq, :bytes_read, blob.bytesize)
          # One call judges the entry (Freshness). The common answer, fresh at this very path,
          # is the binary alone, moved to the front of the store's bytes.
          result = @freshness.serve(ctx, blob, path, key, $VERBOSE == true)
          if result.is_a?(@string) # String
            iseq = load(ctx, result)
            # Nothing in a loaded ISeq points into its binary (Ruby copies every object out of
            # it), so the bytes are freed now, not at a later GC: the next hit's read then reuses
            # the same memory instead of faulting in fresh pages, and the tens of MB a large boot
            # reads never count toward the GC's malloc limit.
            result.clear
            return miss(ctx, :corrupt, path) unless iseq

            ctx.counters.event(:iseq, :hit, path)
            return iseq
          end

          verdict, payload, moved = result
          case verdict
          when :corrupt then return miss(ctx, :corrupt, path)
          when :missing then return skip(ctx, path, :unreadable)
          when :stale then return miss(ctx, :stale, path)
          when :negative then return skip(ctx, path, payload.force_encoding(Encoding::UTF_8).to_sym)
          # Compiled without -w (or warning under it): under -w Ruby compiles it, and a capture of
          # that compile (no warning) replaces the entry.
          when :warns then return miss(ctx, :miss, path, :compile_warnings)
          end

          binary = moved ? relocated(blob, path, payload) : payload
          return miss(ctx, :miss, path, :relocation) unless binary

          iseq = load(ctx, binary) or return miss(ctx, :corrupt, path)
          ctx.counters.event(:iseq, verdict == :revalidated ? :revalidated : :hit, path)
          iseq
        rescue StandardError => e
          CompileCache.internal_error(:iseq, path, e)
          nil
        end

        # The bytes to store for +path+: an entry with the binary, or a negative entry when Ruby
        # must compile the file itself (syntax error, a source we cannot relabel safely).
        # nil when the file cannot be read.
        #: (String, Hash[Symbol, untyped]) -> String?
        def build(path, options)
          identity = Digest.identity(path) or return nil
          verified = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
          # Only a regular file, read from a descriptor opened non-blocking and checked with fstat:
          # a FIFO in the queue (a program that loads one) never blocks the compiler. compile_file
          # opens the path again; a file swapped for a FIFO in between is what the worker's hard
          # time limit is for.
          source = Trust.read_source(path) or return nil
          digest = Digest.xxh64(source)
          negative = ->(why) { Entry.dump(Entry::NEGATIVE, identity, verified, digest, why.to_s) }
          # A literal "<main>" is the same object as the label it would be renamed with.
          return negative.call(:label_literal) if source.include?("<main>")

          begin
            iseq, warned = compile_watching_warnings(path, options, true)
            # Ruby prints parse warnings each time it compiles the file; a cached ISeq would not.
            # Warnings shown at the default level make the file Ruby's to compile; warnings shown
            # only under -w make it Ruby's only in processes that run with -w.
            return negative.call(:compile_warnings) if warned && compile_watching_warnings(path, options, false)[1]
          rescue SyntaxError, ScriptError
            return negative.call(:syntax_error)
          end
          binary = ISeqBinary.rewrite(iseq.to_binary, {}, labels: true)
          return negative.call(:format) unless binary && loads_as?(binary, iseq)

          flags = Entry::RAW
          flags |= Entry::VERBOSE_WARNINGS if warned
          # A path the source spells out, or one folded into a longer literal, cannot be moved.
          paths = [iseq.path, iseq.absolute_path.to_s]
          if paths.any? { |p| source.include?(p.b) } || ISeqBinary.mentioned_outside_objects?(binary, paths)
            flags |= Entry::PINNED_PATH
          end
          Entry.dump(flags, identity, verified, digest, binary, path: iseq.path, realpath: iseq.absolute_path.to_s)
        rescue SystemCallError, IOError
          nil
        end

        private

        # Compiles at the given $VERBOSE level and reports whether the parser warned. Warnings go
        # to a capture, not to stderr.
        def compile_watching_warnings(path, options, level)
          Warning.singleton_class.prepend(WarningCapture) unless Warning.singleton_class.include?(WarningCapture)
          verbose = $VERBOSE
          captured = Thread.current[:__loadout_warnings] = []
          $VERBOSE = level
          [RubyVM::InstructionSequence.compile_file(path, options), !captured.empty?]
        ensure
          $VERBOSE = verbose
          Thread.current[:__loadout_warnings] = nil
        end

        def coverage_running?
          return false unless defined?(::Coverage)

          ::Coverage.respond_to?(:state) ? ::Coverage.state != :idle : ::Coverage.running?
        end

        def skip(ctx, path, reason)
          ctx.counters.event(:iseq, :skipped, path, reason)
          nil
        end

        def miss(ctx, event, path, reason = nil)
          ctx.counters.event(:iseq, event, path, reason)
          ctx.writer.enqueue(path, @variant, @options) unless ctx.readonly || coverage_running?
          nil
        end

        def load(ctx, binary)
          started = @process.clock_gettime(@monotonic, :nanosecond)
          iseq = @loader.load_from_binary(binary)
          ctx.counters.add(:iseq, :load_ns, @process.clock_gettime(@monotonic, :nanosecond) - started)
          iseq
        rescue RuntimeError, TypeError, ArgumentError
          nil
        end

        # The stored binary pointed at +path+, for an entry compiled for another place (a moved
        # checkout, another machine, a file reached through another link): nil when it cannot be
        # (a source that spells out its own path). Only here is the realpath computed.
        def relocated(blob, path, payload)
          entry = @entry.load(blob.frozen? ? blob : blob.dup.freeze, check_payload: false) or return nil
          realpath = File.realpath(path)
          return payload if entry.compiled_at?(path) && entry.realpath == realpath
          return nil if (entry.flags & Entry::PINNED_PATH) != 0
          # A path that is its own realpath is stored as one string; splitting it in two would
          # need a new array object, so a checkout reached through a symlink is recompiled.
          return nil if entry.path == entry.realpath && path != realpath

          replacements = { entry.path => path }
          replacements[entry.realpath] = realpath unless entry.realpath == entry.path
          ISeqBinary.rewrite(payload, replacements)
        rescue SystemCallError
          nil
        end

        def loads_as?(binary, iseq)
          loaded = RubyVM::InstructionSequence.load_from_binary(binary)
          loaded.label == TOP_LABEL && loaded.path == iseq.path && loaded.absolute_path == iseq.absolute_path
        rescue StandardError
          false
        end
      end
    end
  end
end

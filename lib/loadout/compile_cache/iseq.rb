# frozen_string_literal: true

require_relative "entry"
# Loaded with this file, not on first use: a file loaded later goes through this handler itself.
require_relative "iseq_binary"
require_relative "writer"
require_relative "lazy_hook"
require_relative "iseq_build"

module Loadout
  module CompileCache
    # The instruction-sequence handler: answers RubyVM::InstructionSequence.load_iseq, which
    # Ruby calls before compiling a file it requires or loads. Returning nil lets Ruby compile.
    #
    # - hit: the stored binary (checked against its digest, then relocated if the checkout
    #   moved) goes through load_from_binary;
    # - miss, stale or corrupt: Ruby compiles, and the Writer stores that compile (Capture);
    # - while Coverage runs, nothing is served (coverage needs Ruby's own compile).
    #
    # ISeq.build (iseq_build.rb) compiles a file for the store itself: `loadout precompile` and
    # the :exit miss mode.
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
          # lookup with "no": until this process writes entries itself, or sees another boot
          # write some (parallel boots on one cache: theirs may serve the rest), a fetch skips
          # the key and the lookup and only queues the file: a cold boot costs what plain Ruby does.
          @cold = ctx.store.respond_to?(:size) && ctx.store.size.zero? && !ctx.readonly
          @others = ctx.store.respond_to?(:grown_by_others?) ? ctx.store : nil
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
          if @cold
            return miss(ctx, :miss, path) unless @others&.grown_by_others?

            @cold = false
          end

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

        private

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
      end
    end
  end
end

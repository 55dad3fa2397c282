# frozen_string_literal: true

require_relative "entries"
require_relative "lazy_hook"

module Loadout
  module CompileCache
    # The instruction-sequence handler: answers RubyVM::InstructionSequence.load_iseq, which
    # Ruby calls before compiling a file it requires or loads. Returning nil lets Ruby compile.
    #
    # - hit: the stored binary (the store's CRC checked its bytes, Entries#judge its freshness)
    #   is relocated if the checkout moved, then goes through load_from_binary;
    # - miss, stale or corrupt: Ruby compiles, and Capture stores that very compile;
    # - negative (a syntax error, a parse warning): Ruby compiles, nothing is tried;
    # - while Coverage runs, nothing is served or stored (coverage needs Ruby's own compile);
    # - Capture and ISeqBinary (capture.rb, iseq_binary.rb) are loaded on the first miss or
    #   relocation, never on a warm boot that has none. Their own files load through this
    #   handler: while they do, it answers nil, counts nothing and captures nothing. Those two
    #   files are loadout's, not the app's: when other code requires them (the self cache's
    #   writer, precompile), their misses and skips are not counted, and never captured (see
    #   #loading_own).
    #
    # `loadout precompile` and the self cache compile files themselves instead (ISeqBuild).
    class ISeqHandler # :nodoc:
      LETTER = "i"
      # The files Capture and ISeqBinary are defined in (#loading_own).
      OWN_FILES = ["/loadout/compile_cache/capture.rb", "/loadout/compile_cache/iseq_binary.rb"].freeze

      # The hook prepended to RubyVM::InstructionSequence's singleton class, once per process.
      # It reaches the installed handler through a block, so a call per loaded file names no
      # constant (hot path: see ARCHITECTURE.md); with no handler it passes through.
      module LoadISeqHook; end
      cache = CompileCache
      LoadISeqHook.send(:define_method, :load_iseq) do |path|
        (handler = cache.iseq_handler) && handler.fetch(path) || (defined?(super) ? super(path) : nil)
      end

      # Keeps the variant in step with RubyVM::InstructionSequence.compile_option=.
      module OptionHook
        def compile_option=(value)
          super.tap { CompileCache.iseq_handler&.options_changed }
        end
      end

      @hooked = false

      # Prepends the hooks (once per process).
      def self.hook!
        return if @hooked

        RubyVM::InstructionSequence.singleton_class.prepend(LoadISeqHook)
        RubyVM::InstructionSequence.singleton_class.prepend(OptionHook)
        @hooked = true
      end

      def initialize(entries)
        @entries = entries
        @counters = entries.counters
        @key = entries.key
        @readonly = entries.readonly?
        store = entries.store
        # An empty store (a first boot, a CI run without a restored cache) answers every lookup
        # with "no": until this boot's exit, or until it sees another boot write (parallel boots
        # on one cache: theirs may serve the rest), a fetch skips the key and the lookup and only
        # expects the file's capture: a cold boot costs what plain Ruby does.
        @cold = store.respond_to?(:size) && store.size.zero? && !@readonly
        @others = store.respond_to?(:grown_by_others?) ? store : nil
        @capture = nil # made on the first miss: a warm boot never needs one
        @iseq_binary = nil # ISeqBinary, from the first relocation
        @loading_own = false # true while loadout's own Capture or ISeqBinary loads (#loading_own)
        @options = nil
        @variant = nil
        options_changed
        # (hot path: see ARCHITECTURE.md)
        @lazy_hook = LazyHook
        @own_files = OWN_FILES
        @freshness = Freshness
        @loader = RubyVM::InstructionSequence
        @process = Process
        @monotonic = Process::CLOCK_MONOTONIC
      end

      def options_changed #: () -> void
        @options = RubyVM::InstructionSequence.compile_option
        @variant = @key.variant(:iseq, @options.sort_by { |k, _| k.to_s }.inspect)
      end

      # The ISeq for +path+ from the cache, or nil to let Ruby compile it.
      def fetch(path) #: (String) -> RubyVM::InstructionSequence?
        return nil if @loading_own # (loadout's own file: see #loading_own)

        @lazy_hook.poll if @lazy_hook.waiting?
        return skip(path, :coverage) if coverage_running?

        if @cold
          return miss(:miss, path) unless @others&.grown_by_others?

          @cold = false
        end

        key = @key.lookup_key("i", @variant, path) # LETTER
        blob = @entries.get(key)
        unless blob
          @key.release(key)
          return miss(:miss, path)
        end

        @counters.add(:iseq, :bytes_read, blob.bytesize)
        verdict = @entries.judge(blob, path, key, $VERBOSE == true)
        @key.release(key) # (not used again: the next file's key is written into it)
        if verdict == 5 # FRESH (the common answer: blob is the binary now)
          iseq = load(blob)
          # Nothing in a loaded ISeq points into its binary (Ruby copies every object out of
          # it), so the bytes are freed now, not at a later GC: the next hit's read then reuses
          # the same memory, and the tens of MB a large boot reads never count toward the GC's
          # malloc limit.
          blob.clear
          return miss(:corrupt, path) unless iseq

          @counters.event(:iseq, :hit, path)
          return iseq
        end
        served(verdict, blob, path)
      rescue StandardError => e
        CompileCache.__internal_error(:iseq, path, e)
        nil
      end

      # `loadout precompile` for one Ruby file: unless its entry already serves (or says Ruby
      # compiles it), compiled here (ISeqBuild) and stored. Returns whether it stored anything.
      def precompile(path) #: (String) -> bool
        key = @key.for(LETTER, @variant, path)
        if (blob = @entries.get(key))
          verdict = @entries.judge(blob, path, key, false)
          return false if Freshness.served?(verdict) || verdict == Freshness::NEGATIVE
        end
        bytes = ISeqBuild.entry(path, @options) or return false
        @entries.put(key, bytes)
        true
      end

      # At exit: stops capturing; a store that was empty at install is looked up again from now.
      def finish #: () -> void
        @capture&.stop
        @cold = false
      end

      private

      # Every verdict but FRESH (a method of its own: the hit above stays short). Verdicts are
      # written as literals, named in comments (a CI boot revalidates every file here).
      def served(verdict, blob, path)
        case verdict & 15
        when 0 then return miss(:corrupt, path) # CORRUPT
        when 1 then return skip(path, :unreadable) # MISSING
        when 2 then return miss(:stale, path) # STALE
        when 3 then return skip(path, blob.force_encoding(Encoding::UTF_8).to_sym) # NEGATIVE: blob is the reason
        # WARNS: compiled without -w (or warning under it): under -w Ruby compiles it, and a
        # capture of that compile replaces the entry.
        when 4 then return miss(:miss, path, :compile_warnings)
        end

        binary = (verdict & 16).zero? ? blob : relocated(blob, path) # MOVED
        return miss(:miss, path, :relocation) unless binary

        iseq = load(binary)
        blob.clear # (as for a hit: nothing in the ISeq points into it)
        return miss(:corrupt, path) unless iseq

        @counters.event(:iseq, (verdict & 15) == 7 ? :revalidated : :hit, path) # REVALIDATED
        iseq
      end

      def coverage_running?
        return false unless defined?(::Coverage)

        ::Coverage.respond_to?(:state) ? ::Coverage.state != :idle : ::Coverage.running?
      end

      def skip(path, reason)
        return nil if own_file?(path) # (loadout's own, uncounted: see #loading_own)

        @counters.event(:iseq, :skipped, path, reason)
        nil
      end

      # Ruby compiles +path+; its compile is captured (unless nothing may be written).
      def miss(event, path, reason = nil)
        return nil if own_file?(path) # (loadout's own, uncounted: see #loading_own)

        @counters.event(:iseq, event, path, reason)
        return nil if @readonly || coverage_running?

        capture = @capture || loading_own { @capture = Capture.new(@entries) } or return nil
        capture.expect(path, @variant)
        nil
      end

      # Runs the block, which loads one of loadout's own files on first use (capture.rb,
      # iseq_binary.rb), so that the load_iseq of that file, which reaches #fetch, is left to Ruby:
      # a miss there would reach for the very constant being autoloaded (a NameError), and a
      # relocation for ISeqBinary. nil when already loading (another thread's file, meanwhile).
      # The same holds when other code requires one of those files itself (`loadout precompile`
      # and the self cache's writer require iseq_binary.rb) before the first miss: that file is
      # being loaded, so its own miss or relocation cannot load it (#own_file?).
      def loading_own
        return nil if @loading_own

        begin
          @loading_own = true
          yield
        ensure
          @loading_own = false
        end
      end

      def own_file?(path)
        own = @own_files
        path.end_with?(own[0]) || path.end_with?(own[1])
      end

      def load(binary)
        started = @process.clock_gettime(@monotonic, :nanosecond)
        iseq = @loader.load_from_binary(binary)
        @counters.add(:iseq, :load_ns, @process.clock_gettime(@monotonic, :nanosecond) - started)
        iseq
      rescue RuntimeError, TypeError, ArgumentError
        nil
      end

      # The stored binary of the whole entry +blob+ pointed at +path+, for an entry compiled for
      # another place (a moved checkout, another machine, a file reached through another link):
      # nil when it cannot be (a source that spells out its own path). Only here is the realpath
      # computed.
      def relocated(blob, path)
        entry = Entry.load(blob) or return nil
        payload = entry.payload
        realpath = File.realpath(path)
        return payload if entry.compiled_at?(path) && entry.realpath == realpath
        return nil if (entry.flags & Entry::PINNED_PATH) != 0
        # A path that is its own realpath is stored as one string; splitting it in two would
        # need a new array object, so a checkout reached through a symlink is recompiled.
        return nil if entry.path == entry.realpath && path != realpath

        replacements = { entry.path => path }
        replacements[entry.realpath] = realpath unless entry.realpath == entry.path
        iseq_binary = @iseq_binary || (loading_own { @iseq_binary = ISeqBinary } unless own_file?(path)) or return nil
        iseq_binary.rewrite(payload, replacements)
      rescue SystemCallError
        nil
      end
    end
  end
end

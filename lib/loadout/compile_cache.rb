# frozen_string_literal: true

require_relative "error"
require_relative "instrumentation"

module Loadout
  # Caches the expensive compile and parse steps of a boot in the store: Ruby instruction
  # sequences (through RubyVM::InstructionSequence.load_iseq), YAML.load_file and friends, and
  # JSON.load_file. Every handler shares one key and validation path (CompileCache::Key,
  # CompileCache::Freshness): keys are relative to the roots so a moved checkout still hits,
  # entries are checked with one stat and a content digest, and anything unexpected falls back
  # to Ruby doing the work itself.
  #
  #   Loadout::CompileCache.install!(store: store, roots: [app_root, *gem_dirs, RbConfig::CONFIG["prefix"]])
  #   ...
  #   Loadout::CompileCache.finish! # before store.close (Loadout.setup does both at exit)
  module CompileCache
    KINDS = %i[iseq yaml json].freeze
    FORMAT_VERSION = 1 # bump on ANY change to what is stored; old entries are then ignored
    TRUST = [nil, :none, :stable, :all].freeze
    MISS_COMPILE = %i[capture exit].freeze

    autoload :Counters, File.expand_path("compile_cache/counters", __dir__)
    autoload :Digest, File.expand_path("compile_cache/digest", __dir__)
    autoload :Entry, File.expand_path("compile_cache/entry", __dir__)
    autoload :Fidelity, File.expand_path("compile_cache/fidelity", __dir__)
    autoload :ISeq, File.expand_path("compile_cache/iseq", __dir__)
    autoload :ISeqBinary, File.expand_path("compile_cache/iseq_binary", __dir__)
    autoload :JSON, File.expand_path("compile_cache/json", __dir__)
    autoload :Key, File.expand_path("compile_cache/key", __dir__)
    autoload :LazyHook, File.expand_path("compile_cache/lazy_hook", __dir__)
    autoload :Serializer, File.expand_path("compile_cache/serializer", __dir__)
    autoload :Freshness, File.expand_path("compile_cache/freshness", __dir__)
    autoload :ValueHandler, File.expand_path("compile_cache/value_handler", __dir__)
    autoload :Values, File.expand_path("compile_cache/values", __dir__)
    autoload :Writer, File.expand_path("compile_cache/writer", __dir__)
    autoload :YAML, File.expand_path("compile_cache/yaml", __dir__)

    # What a handler needs from the installation: one per install!.
    # +racy_ns+: Freshness's racy window (tests that write files and boot at once set 0).
    Context = Struct.new(:store, :readonly, :trust, :key, :racy_ns, :counters, :miss_compile) do # :nodoc:
      # The stat record of an entry's key, for Freshness (made once: a hit allocates nothing for it).
      def stat_lookup
        keys = Key # (named once: the lookup runs per judgement; see Freshness)
        @stat_lookup ||= lambda do |key|
          # One ivar for the pair: a thread that reads it sees a key with its own stat key.
          looked_up = @looked_up = [key, keys.stat_key(key)]
          store.get(looked_up[1])
        end
      end

      # The stat record key of +key+, to store a new record under: the one the last lookup built
      # when it was for this very String (a revalidation always looks up first; a CI boot
      # revalidates every file, so the key is built once per file, not twice).
      def stat_key(key)
        looked_up = @looked_up
        looked_up && looked_up[0].equal?(key) ? looked_up[1] : Key.stat_key(key)
      end

      # The Writer, made on the first miss (a warm boot never loads it).
      def writer
        @writer ||= Writer.new(store, miss_compile, counters, key)
      end

      # Runs the writer, if a miss made one (see CompileCache.finish!).
      def finish
        @writer&.run
      end

      # Whether +path+ is served without its per-file stat (trust: :stable for gem and Ruby
      # dirs, :all for everything).
      def trusted?(path)
        trust == :all || (trust == :stable && key.stable?(path))
      end
    end

    @context = nil
    @counters = nil
    @warned = false

    class << self
      attr_reader :context # :nodoc:

      # Turns the enabled handlers on. Options are validated (ConfigError names the bad one).
      # - +roots+: absolute dirs used to make keys relative (the application root first).
      # - +trust+: nil or :none checks every file; :stable skips the per-file stat for files
      #   under every root but the first; :all skips it everywhere (both: immutable images only).
      # - +miss_compile+: :capture (default) stores the ISeqs Ruby compiled on this boot's misses
      #   (see Capture); :exit compiles the misses again at exit (for callers that never run the
      #   files they load, like precompile's workers).
      #: (store: untyped, ?iseq: bool, ?yaml: bool, ?json: bool, ?readonly: bool, ?trust: Symbol?, ?roots: Array[String], ?miss_compile: Symbol) -> void
      def install!(store:, iseq: true, yaml: true, json: true, readonly: false, trust: nil, roots: [],
                   miss_compile: default_miss_compile)
        check_options(store, trust, roots, miss_compile, iseq: iseq, yaml: yaml, json: json)
        uninstall!
        readonly = true if readonly || !store.writable?
        @counters = Counters.new
        ValueCalls.reset! if const_defined?(:ValueCalls, false)
        @context = Context.new(store, readonly, trust, Key.new(roots), Freshness::RACY_NS,
                               @counters, miss_compile)
        # YAML and JSON first, so their files are not compiled through the ISeq hook.
        YAML.install!(@context) if yaml
        JSON.install!(@context) if json
        if iseq && supported?(:iseq)
          ISeq.install!(@context)
        elsif LazyHook.waiting?
          LazyHook.trace!
        end
        true
      end

      # Writes what this process queued for the cache (the :exit mode's compiles, loadout's own
      # self cache) and stops capturing. Boot.finish calls it first at exit, before it records,
      # flushes and closes the store; a caller of install! without Loadout.setup calls it itself
      # before closing its store. Safe to call more than once.
      def finish! #: () -> void
        @context&.finish
      rescue StandardError => e
        internal_error(:iseq, nil, e)
      end

      # Turns every handler off (their hooks stay in place but pass straight through).
      def uninstall! #: () -> void
        ISeq.uninstall! if autoload?(:ISeq).nil?
        YAML.uninstall! if autoload?(:YAML).nil?
        JSON.uninstall! if autoload?(:JSON).nil?
        @context = nil
      end

      def installed? #: () -> bool
        !@context.nil?
      end

      # Whether +kind+ (:iseq, :yaml, :json) can be cached on this Ruby.
      def supported?(kind) #: (Symbol) -> bool
        case kind
        when :iseq
          RUBY_ENGINE == "ruby" && defined?(RubyVM::InstructionSequence) &&
            RubyVM::InstructionSequence.respond_to?(:load_from_binary) && RUBY_VERSION >= "3.0"
        when :yaml, :json then true
        else raise ConfigError.new(:kind, kind, KINDS.map(&:inspect).join(", "))
        end
      end

      # Counters per kind: hits, misses, stale, revalidated, corrupt, skipped (+ reasons),
      # compiles (files compiled into the cache by this process), bytes_read, and nanoseconds
      # spent in load_from_binary/deserialising (load_ns), compiling/parsing (compile_ns) and
      # digesting (digest_ns).
      def stats #: () -> Hash[Symbol, Hash[Symbol, untyped]]
        (@counters || Counters.new).to_h
      end

      # `loadout precompile` for one file, into the installed store: an ISeq miss (compiled by
      # the writer), or a YAML/JSON file loaded with every call shape a boot of the app may use
      # (ValueCalls), so the next boot finds the very entries it looks up. Raises the file's own
      # error when it cannot be loaded at all.
      def precompile(path) #: (String) -> void
        ctx = @context or raise Error, "the compile cache is not installed"
        kind = if path.end_with?(".yml", ".yaml") then :yaml
               elsif path.end_with?(".json") then :json
               end
        unless kind
          RubyVM::InstructionSequence.load_iseq(path) if defined?(RubyVM::InstructionSequence.load_iseq)
          return
        end

        require kind == :yaml ? "yaml" : "json"
        require_relative "compile_cache/value_calls"
        @shapes = nil unless @shapes_for.equal?(ctx)
        @shapes_for = ctx
        shapes = (@shapes ||= {})[kind] ||= ValueCalls.shapes(ctx.store, kind)
        ValueCalls.precompile(path, shapes)
      end

      # At a boot's exit (Boot records it when the boot wrote to the cache): the YAML and JSON
      # call shapes this process used, for precompile and check (ValueCalls).
      def __record_boot(store) # :nodoc:
        ValueCalls.record(store) if const_defined?(:ValueCalls, false)
      end

      # Reports an unexpected error inside a handler: counted, warned about once per process;
      # the caller then lets Ruby do the work itself.
      def internal_error(kind, path, error) # :nodoc:
        @counters&.event(kind, :skipped, path, :error)
        return if @warned

        @warned = true
        warn "loadout: compile cache (#{kind}) failed on #{path} (#{error.class}: #{error.message}); " \
             "falling back to Ruby for it. Please report this"
      end

      private

      def default_miss_compile
        :capture
      end

      def check_options(store, trust, roots, miss_compile, **kinds)
        %i[get put key? writable? flush].each do |m|
          raise ConfigError.new(:store, store, "a Loadout::Store") unless store.respond_to?(m)
        end
        raise ConfigError.new(:trust, trust, "nil, :none, :stable or :all") unless TRUST.include?(trust)
        unless MISS_COMPILE.include?(miss_compile)
          raise ConfigError.new(:miss_compile, miss_compile, MISS_COMPILE.map(&:inspect).join(" or "))
        end
        unless roots.is_a?(Array) && roots.all? { |r| r.is_a?(String) && r.start_with?("/") }
          raise ConfigError.new(:roots, roots, "an Array of absolute directory Strings")
        end

        kinds.each do |name, value|
          raise ConfigError.new(name, value, "true or false") unless [true, false].include?(value)
        end
      end
    end
  end
end

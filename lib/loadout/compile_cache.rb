# frozen_string_literal: true

require_relative "error"
require_relative "instrumentation"
require_relative "config"

module Loadout
  # Caches the expensive compile and parse steps of a boot in the store: Ruby instruction
  # sequences (through RubyVM::InstructionSequence.load_iseq), YAML.load_file and friends, and
  # JSON.load_file.
  #
  #   Loadout::CompileCache.install!(store: store, roots: [app_root, *gem_dirs, RbConfig::CONFIG["prefix"]])
  #   ...
  #   Loadout::CompileCache.finish! # before store.close (Loadout.setup does both at exit)
  #
  # One handler per kind (ISeqHandler, YAMLHandler, JSONHandler; the last two are
  # ValueHandlers) does only what is its own: turn a payload into what Ruby asked for, and store
  # what Ruby made on a miss. Everything else is shared: the key (Key: relative to the roots, so
  # a moved checkout still hits), the entry format (Entry), and reading, judging and writing
  # entries (Entries, Freshness: one stat, else the stat record, else a content digest). Anything
  # unexpected falls back to Ruby doing the work itself.
  #
  # A hit, a capture and a revalidation run once per loaded file: they follow the hot-path rule
  # of docs/ARCHITECTURE.md ("The warm-boot hot path": no constant named there on Ruby 3.1).
  module CompileCache
    KINDS = %i[iseq yaml json].freeze
    FORMAT_VERSION = 3 # bump on ANY change to what is stored; old entries are then ignored

    autoload :Capture, File.expand_path("compile_cache/capture", __dir__)
    autoload :EntryChecker, File.expand_path("compile_cache/entry_checker", __dir__)
    autoload :Counters, File.expand_path("compile_cache/counters", __dir__)
    autoload :Entries, File.expand_path("compile_cache/entries", __dir__)
    autoload :Entry, File.expand_path("compile_cache/entry", __dir__)
    autoload :Fidelity, File.expand_path("compile_cache/fidelity", __dir__)
    autoload :Freshness, File.expand_path("compile_cache/freshness", __dir__)
    autoload :ISeqBinary, File.expand_path("compile_cache/iseq_binary", __dir__)
    autoload :ISeqBuild, File.expand_path("compile_cache/iseq_build", __dir__)
    autoload :ISeqHandler, File.expand_path("compile_cache/iseq_handler", __dir__)
    autoload :JSONHandler, File.expand_path("compile_cache/json_handler", __dir__)
    autoload :Key, File.expand_path("compile_cache/key", __dir__)
    autoload :LazyHook, File.expand_path("compile_cache/lazy_hook", __dir__)
    autoload :Serializer, File.expand_path("compile_cache/serializer", __dir__)
    autoload :ValueCalls, File.expand_path("compile_cache/value_calls", __dir__)
    autoload :ValueHandler, File.expand_path("compile_cache/value_handler", __dir__)
    autoload :XXH64, File.expand_path("compile_cache/xxh64", __dir__)
    autoload :YAMLHandler, File.expand_path("compile_cache/yaml_handler", __dir__)
    autoload :YAMLTags, File.expand_path("compile_cache/yaml_tags", __dir__)

    @entries = nil
    @iseq_handler = nil
    @yaml_handler = nil
    @json_handler = nil
    @finish_jobs = []
    @counters = nil
    @warned = false
    @precompile_shapes = {} # kind => shapes, for the installed store (see #precompile)
    @checker = nil # the EntryChecker #check reuses, and what it was made for
    @checker_for = nil

    class << self
      # The installed handlers (nil when off): the hooks, installed once per process, call them.
      attr_reader :iseq_handler, :yaml_handler, :json_handler # :nodoc:

      # What install! set up (the store, keys, counters), or nil when not installed.
      attr_reader :entries # :nodoc:

      # Turns the enabled handlers on. Options are validated (ConfigError names the bad one).
      # - +roots+: absolute dirs used to make keys relative (the application root first).
      # - +trust+: nil or :none checks every file; :stable skips the per-file stat for files
      #   under every root but the first; :all skips it everywhere (both: immutable images only).
      # - +racy_ns+: Freshness's racy window (tests that write files and boot at once pass 0).
      #: (store: untyped, ?iseq: bool, ?yaml: bool, ?json: bool, ?readonly: bool, ?trust: Symbol?,
      #:  ?roots: Array[String], ?racy_ns: Integer) -> void
      def install!(store:, iseq: true, yaml: true, json: true, readonly: false, trust: nil, roots: [],
                   racy_ns: Freshness::RACY_NS)
        check_options(store, trust, roots, racy_ns, iseq: iseq, yaml: yaml, json: json)
        uninstall!
        @counters = Counters.new
        @precompile_shapes = {}
        ValueCalls.reset!
        @entries = Entries.new(store, key: Key.new(roots), counters: @counters,
                                      readonly: readonly || !store.writable?, trust: trust, racy_ns: racy_ns)
        # YAML and JSON first, so their files are not compiled through the ISeq hook.
        if yaml
          @yaml_handler = YAMLHandler.new(@entries)
          YAMLHandler.hook!
        end
        if json
          @json_handler = JSONHandler.new(@entries)
          JSONHandler.hook!
        end
        if iseq && supported?(:iseq)
          @iseq_handler = ISeqHandler.new(@entries)
          ISeqHandler.hook!
        elsif LazyHook.waiting?
          LazyHook.trace!
        end
        true
      end

      # The end of a boot's use of the cache: stops capturing, then runs the jobs given to
      # #__at_finish (loadout's own self cache). Boot.finish calls it first at exit, while the
      # store is open; a caller of install! without Loadout.setup calls it itself before closing
      # its store. Safe to call more than once.
      def finish! #: () -> void
        @iseq_handler&.finish
        jobs = @finish_jobs
        @finish_jobs = []
        jobs.each(&:call)
      rescue StandardError => e
        __internal_error(:iseq, nil, e)
      end

      # Runs +block+ once, at #finish! (after this boot's captures stop).
      def __at_finish(&block) # :nodoc:
        @finish_jobs << block
      end

      # Turns every handler off (their hooks stay in place but pass straight through).
      def uninstall! #: () -> void
        @iseq_handler&.finish
        @iseq_handler = @yaml_handler = @json_handler = @entries = nil
        @finish_jobs = []
      end

      def installed? #: () -> bool
        !@entries.nil?
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

      # `loadout precompile` for one file, into the installed store: a Ruby file compiled and
      # stored (ISeqHandler#precompile), or a YAML/JSON file loaded through the hooks with every
      # call shape a boot of the app may use (ValueCalls), so the next boot finds the very
      # entries it looks up. Raises the file's own error when it cannot be loaded at all.
      def precompile(path) #: (String) -> void
        entries = @entries or raise Error, "the compile cache is not installed"
        kind = if path.end_with?(".yml", ".yaml") then :yaml
               elsif path.end_with?(".json") then :json
               end
        unless kind
          @iseq_handler&.precompile(path)
          return
        end

        require kind == :yaml ? "yaml" : "json"
        ValueCalls.precompile(path, @precompile_shapes[kind] ||= ValueCalls.shapes(entries.store, kind))
      end

      # `loadout check` for one file: [status, reason] with status :hit, :stale or :missing.
      # +variant+ (ISeq) or +key+ (YAML, JSON): the entry a recorded boot used (see EntryChecker).
      # One EntryChecker per store and roots is reused, so a whole check lists the store once.
      #: (store: untyped, path: String, kind: Symbol, roots: Array[String], ?variant: String?, ?key: String?)
      #:   -> [Symbol, String?]
      def check(store:, path:, kind:, roots:, variant: nil, key: nil)
        raise ConfigError.new(:kind, kind, KINDS.map(&:inspect).join(", ")) unless KINDS.include?(kind)

        @checker = nil unless @checker && @checker_for == [store, roots]
        @checker_for = [store, roots]
        (@checker ||= EntryChecker.new(store, roots)).check(path, kind, variant: variant, key: key)
      end

      # At a boot's exit (Boot records it when the boot wrote to the cache): the YAML and JSON
      # call shapes this process used, for precompile and check (ValueCalls).
      def __record_boot(store) # :nodoc:
        ValueCalls.record(store) if autoload?(:ValueCalls).nil?
      end

      # Reports an unexpected error inside a handler: counted, warned about once per process;
      # the caller then lets Ruby do the work itself.
      def __internal_error(kind, path, error) # :nodoc:
        @counters&.event(kind, :skipped, path, :error)
        return if @warned

        @warned = true
        warn "loadout: compile cache (#{kind}) failed on #{path} (#{error.class}: #{error.message}); " \
             "falling back to Ruby for it. Please report this"
      end

      private

      def check_options(store, trust, roots, racy_ns, **kinds)
        %i[get put key? writable? flush].each do |m|
          raise ConfigError.new(:store, store, "a Loadout::Store") unless store.respond_to?(m)
        end
        raise ConfigError.new(:trust, trust, Config.trust_levels_text) unless Config::TRUST_LEVELS.include?(trust)
        unless roots.is_a?(Array) && roots.all? { |r| r.is_a?(String) && r.start_with?("/") }
          raise ConfigError.new(:roots, roots, "an Array of absolute directory Strings")
        end
        raise ConfigError.new(:racy_ns, racy_ns, "an Integer >= 0") unless racy_ns.is_a?(Integer) && racy_ns >= 0

        kinds.each do |name, value|
          raise ConfigError.new(name, value, "true or false") unless [true, false].include?(value)
        end
      end
    end
  end
end

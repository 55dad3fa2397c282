# frozen_string_literal: true

require "loadout/config"

module Loadout
  # The body of Loadout.setup: opens the store under the configured cache dir and installs the
  # components that are on. Only a bad Config raises (before this runs); everything the
  # environment can break (an unwritable cache dir, a missing component, a component failing to
  # install) ends in one warning and plain Ruby behaviour for that part.
  module Boot # :nodoc:
    # A component loads only when its file is present, and one that fails to load costs one
    # warning, never the boot.
    COMPONENT_FILES = { Store: "store", LoadPath: "load_path", CompileCache: "compile_cache" }.freeze
    # Stats::RECORD_KEY, spelled out: naming it would load stats.rb at the exit of every boot,
    # including the warm ones that record nothing.
    STATS_RECORD_KEY = "st/last_boot"

    @config = nil
    @store = nil
    @installed = []
    @setup_seconds = nil
    @at_exit = false
    @off = {}

    class << self
      attr_reader :config, :store, :installed, :setup_seconds

      # Components this Ruby asked for that stay off on this engine, with why ({ load_path: "..." }).
      # Said once: an :off event (LOADOUT_LOG) and a line in the stats, never a warning per boot.
      attr_reader :off

      # Applies +config+ once per process. A second call with the same settings is a no-op; with
      # different settings it warns and keeps the first (re-installing require hooks mid-boot
      # would make the two halves of the boot disagree). Returns true when it set up.
      #: (Config) -> bool
      def setup(config)
        if @config
          unless @config == config
            warn "loadout: Loadout.setup was already called with different options; keeping the first " \
                 "(#{diff(@config, config)}). Call it once, from config/boot.rb or require \"loadout/setup\""
          end
          return false
        end

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @config = config
        Loadout.log! if config.log
        @store = open_store(config) if config.load_path_cache || config.compile_cache?
        install_components(config) if @store
        # Last, so the require timer wraps the components' require decoration and sees every
        # require, including the ones they answer without Ruby (a LoadError from the index).
        Stats.enable! if config.stats
        unless @at_exit
          @at_exit = true
          at_exit { finish }
        end
        @setup_seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        true
      end

      # Uninstalls every component and closes the store; setup may then run again (tests).
      def teardown #: () -> void
        @installed.reverse_each { |mod| guard("uninstall #{mod}") { mod.uninstall! } }
        @installed = []
        @off = {}
        guard("close the store") { @store&.close }
        @store = nil
        @config = nil
      end

      # Why +part+ (:load_path or :iseq) cannot run on this Ruby, or nil when it can. Boot, and the
      # CLI's precompile and check, leave such a part off.
      #: (Symbol) -> String?
      def unsupported(part)
        case part
        when :load_path
          # The index resolves features the way CRuby's require does; other engines load some
          # features their own way (JRuby: `require "x.jar"`, Java extensions), where the index
          # would hand them a wrong answer. Off CRuby, the engine requires as usual.
          "the index follows CRuby's require; #{RUBY_ENGINE} requires as usual" unless RUBY_ENGINE == "ruby"
        when :iseq
          cache = component(:CompileCache)
          if cache.respond_to?(:supported?) && !cache.supported?(:iseq)
            "no RubyVM::InstructionSequence binary format on #{RUBY_ENGINE} #{RUBY_VERSION}"
          end
        end
      end

      # Loads a component by constant name if its file is present; nil otherwise.
      #: (Symbol) -> Module?
      def component(name)
        return Loadout.const_get(name) if Loadout.const_defined?(name, false)

        file = COMPONENT_FILES.fetch(name)
        return nil unless File.exist?(File.join(__dir__, "#{file}.rb"))

        require "loadout/#{file}"
        Loadout.const_defined?(name, false) ? Loadout.const_get(name) : nil
      rescue ScriptError, StandardError => e # ScriptError: a file this Ruby cannot load or parse
        warn "loadout: #{name} failed to load (#{e.class}: #{e.message.lines.first&.chomp}); running without it"
        nil
      end

      private

      def diff(old, new)
        changed = old.to_h.reject { |k, v| new.to_h[k] == v }
        changed.map { |k, v| "#{k}: #{v.inspect} kept, #{new.to_h[k].inspect} ignored" }.join("; ")
      end

      # Decides how the store may be used before opening it, so an unusable cache dir costs one
      # warning from here and none from the store.
      def open_store(config)
        readonly = config.readonly
        unless readonly
          problem = writable_problem(config.cache_dir)
          if problem
            if File.file?(config.store_path) && File.readable?(config.store_path)
              warn "loadout: cache dir #{config.cache_dir} is not writable (#{problem}); using the cache read-only. " \
                   "Fix: make the directory writable, set LOADOUT_CACHE_DIR to a writable directory, " \
                   "or set LOADOUT_READONLY=1 to silence this"
              readonly = true
            else
              warn "loadout: cache dir #{config.cache_dir} is not usable (#{problem}); running without the cache. " \
                   "Fix: make it a writable directory (mkdir -p / chmod u+rwx), or set LOADOUT_CACHE_DIR to one"
              return nil
            end
          end
        end
        # Read-only with nothing to read: there is nothing to gain, and nothing to warn about.
        return nil if readonly && !File.file?(config.store_path)

        store_class = component(:Store) or return nil
        store_class.open(config.store_path, readonly: readonly, fail_safe: true, defer_writes: true)
      rescue ConfigError
        raise
      rescue StandardError => e
        warn "loadout: cache store #{config.store_path} could not be opened (#{e.class}: #{e.message}); running without the cache"
        nil
      end

      # Returns nil when cache_dir exists (or can be made) and is writable, else a short reason.
      def writable_problem(dir)
        return "a file is in the way" if File.exist?(dir) && !File.directory?(dir)

        make_dir(dir)
        return "not a directory" unless File.directory?(dir)
        return "not writable by this process" unless File.writable?(dir) && File.executable?(dir)

        nil
      rescue SystemCallError => e
        e.class.name.split("::").last.then { |errno| "#{errno}: #{e.message.sub(/ @ .*/, "")}" }
      end

      # mkdir -p without loading fileutils on every boot.
      def make_dir(dir)
        return if File.directory?(dir)

        parent = File.dirname(dir)
        make_dir(parent) unless parent == dir
        Dir.mkdir(dir)
      rescue Errno::EEXIST
        raise unless File.directory?(dir)
      end

      # The compile cache goes first, so the load path index's own files (and anything else of
      # loadout's required after it) come from the cache instead of being compiled on every
      # boot: 1% fewer instructions on a warm 470-file boot (callgrind, fresh caches).
      def install_components(config)
        install_compile_cache(config) if config.compile_cache?
        return unless config.load_path_cache
        if (why = unsupported(:load_path))
          return turn_off(:load_path, why)
        end
        return unless (mod = component(:LoadPath))

        install(mod) do
          mod.install!(store: @store, development_mode: config.development_mode,
                       ignore_directories: config.ignore_directories, trust: config.trust)
        end
      end

      def install_compile_cache(config)
        mod = component(:CompileCache) or return

        kinds = config.compile_cache.to_h do |kind|
          [kind, !mod.respond_to?(:supported?) || mod.supported?(kind) ? true : false]
        end
        if kinds.key?(:iseq) && (why = unsupported(:iseq))
          turn_off(:iseq, why)
          kinds[:iseq] = false
        end
        install(mod) do
          mod.install!(store: @store, iseq: kinds[:iseq] || false, yaml: kinds[:yaml] || false,
                       json: kinds[:json] || false, readonly: config.readonly || !@store.writable?,
                       trust: config.compile_cache_trust, roots: config.roots)
        end
      end

      def turn_off(component, reason)
        @off[component] = reason
        Instrumentation.emit(:off, RUBY_ENGINE, cache: component, reason: reason)
        nil
      end

      def install(mod)
        guard("install #{mod}") do
          yield
          @installed << mod
        end
      end

      # Runs at exit: records this boot's numbers for `loadout stats`, then flushes the batched
      # writes of the whole boot in one go and closes the store.
      def finish
        store = @store or return
        if record_boot?(store)
          guard("record boot stats") { Stats.record(store) }
          # The app's $LOAD_PATH, for `loadout check` / `precompile` (which run in another process).
          if @installed.any? { |m| m.name == "Loadout::LoadPath" }
            guard("record the load path") { LoadPath.__record_boot(store, @config&.root) }
          end
        end
        guard("flush the store") { store.flush }
        guard("close the store") { store.close }
        @store = nil
      end

      # A boot that hit everything writes nothing: recording it would append to the log and
      # rewrite the hint file on every warm boot. So the record is the last boot that wrote
      # anything (or any boot under LOADOUT_STATS=1, or the first one).
      def record_boot?(store)
        return false unless store.writable?
        return true if @config&.stats || !store.key?(STATS_RECORD_KEY)

        pending = store.respond_to?(:stats) ? store.stats[:pending_writes] : nil
        pending.is_a?(Integer) && pending.positive?
      end

      # A failing component must never take the host down: it is reported once and skipped.
      def guard(what)
        yield
      rescue ConfigError
        raise
      rescue ScriptError, StandardError => e
        warn "loadout: could not #{what} (#{e.class}: #{e.message}); continuing without it"
        nil
      end
    end
  end
end

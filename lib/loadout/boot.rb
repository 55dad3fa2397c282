# frozen_string_literal: true

require_relative "config"
# At setup, not at exit: a file loaded after the compile cache has finished would be compiled
# by Ruby on every boot.
require_relative "last_boot"
require_relative "loaded_files"
require_relative "boot/store_opening"

module Loadout
  # The body of Loadout.setup: opens the store under the configured cache dir and installs the
  # components that are on. Only a bad Config raises (before this runs); everything the
  # environment can break (an unwritable cache dir, a missing component, a component failing to
  # install) ends in one warning and plain Ruby behaviour for that part.
  module Boot # :nodoc:
    # A component loads only when its file is present, and one that fails to load costs one
    # warning, never the boot.
    COMPONENT_FILES = { Store: "store", LoadPath: "load_path", CompileCache: "compile_cache" }.freeze
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
        @setup_pid = Process.pid
        LoadedFiles.start if config.compile_cache?
        Loadout.log! if config.log
        # Loaded before the compile cache is installed: loadout's own file then comes from the
        # self cache, and is never counted as one of the app's misses.
        Stats if config.stats
        @store = StoreOpening.call(config) { component(:Store) } if config.load_path_cache || config.compile_cache?
        install_components(config) if @store
        # Last, so the require timer wraps the components' require decoration and sees every
        # require, including the ones they answer without Ruby (a LoadError from the index).
        Stats.enable!(root: config.root) if config.stats
        unless @at_exit
          @at_exit = true
          at_exit { finish }
        end
        @setup_seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        Stats.setup_seconds = @setup_seconds if config.stats
        true
      end

      # Uninstalls every component and closes the store; setup may then run again (tests).
      def teardown #: () -> void
        cache = @installed.find { |m| m.name == "Loadout::CompileCache" }
        guard("finish the compile cache") { cache.finish! } if cache.respond_to?(:finish!)
        @installed.reverse_each { |mod| guard("uninstall #{mod}") { mod.uninstall! } }
        @installed = []
        @off = {}
        Stats.off.clear unless Loadout.autoload?(:Stats)
        guard("close the store") { @store&.close }
        @store&.__dir&.close if @store.respond_to?(:__dir)
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
          return "the index follows CRuby's require; #{RUBY_ENGINE} requires as usual" unless RUBY_ENGINE == "ruby"

          BOX_OFF if boxes?
        when :iseq
          return BOX_OFF if boxes?

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

        require_relative file
        Loadout.const_defined?(name, false) ? Loadout.const_get(name) : nil
      rescue ScriptError, StandardError => e # ScriptError: a file this Ruby cannot load or parse
        warn "loadout: #{name} failed to load (#{e.class}: #{e.message.lines.first&.chomp}); running without it"
        nil
      end

      # Ruby::Box (Ruby 4.0, RUBY_BOX=1): every require, the main program's too, goes through
      # Ruby::Box::Loader, which loads without calling the methods loadout hooks (Kernel#require,
      # RubyVM::InstructionSequence.load_iseq), and each box has its own $LOAD_PATH and
      # $LOADED_FEATURES. The index and the ISeq cache would never be asked: they stay off, and
      # setup says so once (an app that turned boxes on would otherwise see no speed-up and no
      # reason). The YAML and JSON caches hook the libraries' methods, which boxes do call.
      def boxes? #: () -> bool
        defined?(::Ruby::Box) && ::Ruby::Box.respond_to?(:enabled?) && ::Ruby::Box.enabled? ? true : false
      end

      BOX_OFF = "Ruby::Box is enabled (RUBY_BOX=1): requires go through the box loader, which loadout's hooks never see"
      private_constant :BOX_OFF

      private

      def diff(old, new)
        changed = old.to_h.reject { |k, v| new.to_h[k] == v }
        changed.map { |k, v| "#{k}: #{v.inspect} kept, #{new.to_h[k].inspect} ignored" }.join("; ")
      end

      # The compile cache goes first, so the load path index's own files (and anything else of
      # loadout's required after it) come from the cache instead of being compiled on every
      # boot.
      def install_components(config)
        warn_boxes(config) if boxes?
        install_compile_cache(config) if config.compile_cache?
        return unless config.load_path_cache
        if (why = unsupported(:load_path))
          return turn_off(:load_path, why)
        end
        return unless (mod = component(:LoadPath))

        install(mod) do
          mod.install!(store: @store, development_mode: config.development_mode,
                       ignore_directories: config.ignore_directories, trust: config.trust, root: config.root)
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

      # The one warning of a boot under Ruby::Box: what is off, and why.
      def warn_boxes(config)
        off = []
        off << "the load path index" if config.load_path_cache
        off << "the ISeq cache" if config.compile_cache.include?(:iseq)
        return if off.empty?

        on = config.compile_cache & %i[yaml json]
        caches = on.size > 1 ? "caches stay" : "cache stays"
        still = on.empty? ? "nothing else is on" : "the #{on.map(&:upcase).join(" and ")} #{caches} on"
        warn "loadout: Ruby::Box is enabled (RUBY_BOX=1): #{off.join(" and ")} stay off, since requires in boxes " \
             "bypass them; #{still}"
      end

      def turn_off(component, reason)
        @off[component] = reason
        # (Told only to a Stats that LOADOUT_STATS or LOADOUT_LOG loaded: other boots load none of it.)
        Stats.off[component] = reason unless Loadout.autoload?(:Stats)
        Instrumentation.emit(:off, RUBY_ENGINE, cache: component, reason: reason)
        nil
      end

      def install(mod)
        guard("install #{mod}") do
          yield
          @installed << mod
        end
      end

      # The one exit sequence of a boot (the only at_exit hook loadout registers for it), in
      # order: the compile cache's finish (captures stopped, the self cache written, while the store is
      # open); what this boot loaded (for `loadout check`) and the app's $LOAD_PATH, when it
      # appends to the store anyway or was asked to record (`record: true`, the boot `loadout
      # precompile -- COMMAND` runs); the batched writes of the whole boot flushed in one go; the
      # store closed; then this boot's numbers beside it (LastBoot, for `loadout stats`), saying
      # whether it appended anything. Forked children record nothing of their own: the process
      # that set up is the boot.
      def finish
        store = @store or return
        cache = @installed.find { |m| m.name == "Loadout::CompileCache" }
        guard("finish the compile cache") { cache.finish! } if cache.respond_to?(:finish!)
        own = @setup_pid == Process.pid
        writable = store.writable?
        if writable && (@config&.record || appends?(store, cache))
          if own && cache
            # (The ISeq cache asked for but off on this engine, JRuby: no Ruby files to record.)
            iseq = @config.compile_cache.include?(:iseq) && !@off.key?(:iseq)
            guard("record the loaded files") { LoadedFiles.record(store, cache, iseq) }
          end
          # The app's $LOAD_PATH, for `loadout check` / `precompile` (which run in another process).
          if @installed.any? { |m| m.name == "Loadout::LoadPath" }
            guard("record the load path") { LoadPath.__record_boot(store, @config&.root) }
          end
          # The YAML/JSON calls the app made, for precompile and check (which run in another process).
          if @installed.any? { |m| m.name == "Loadout::CompileCache" }
            guard("record the value calls") { CompileCache.__record_boot(store) }
          end
        end
        guard("record the variants in use") { record_seen(store) }
        wrote = writable && appends?(store, cache)
        guard("flush the store") { store.flush }
        guard("close the store") { store.close }
        @store = nil
        # (The cache dir the boot checked, held open: what follows is written in it, not by path.)
        dir = store.respond_to?(:__dir) ? store.__dir : nil
        if own && writable && dir
          record = LastBoot.snapshot(@installed, @setup_seconds, wrote)
          guard("record the last boot") { LastBoot.write(dir, File.basename(store.path), record) }
        end
        dir&.close
      end

      # Whether this boot appends to the store: writes queued for the exit flush (entries, stat
      # records, listings, the records above), or ISeqs its captures already stored. Only such a
      # boot records what it loaded (unless asked to), so a warm boot that hit everything appends
      # nothing, whatever it loaded and whether LOADOUT_STATS watches it. (Misses alone say
      # nothing: a value no codec reproduces, or a capture another parallel boot holds the lease
      # for, is a miss that writes nothing.)
      def appends?(store, cache)
        pending = store.respond_to?(:stats) ? store.stats[:pending_writes] : nil
        return true if pending.is_a?(Integer) && pending.positive?

        cache ? cache.stats.any? { |_, c| c[:compiles].to_i.positive? } : false
      end

      # The compile cache variants this boot used, for the eviction of unused ones: a few reads,
      # and a write at most once a day per variant.
      def record_seen(store)
        return unless store.writable? && @installed.any? { |m| m.name == "Loadout::CompileCache" }

        key = CompileCache.entries&.key or return
        key.seen_records.each { |k, value| store.put(k, value) unless store.get(k) == value }
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

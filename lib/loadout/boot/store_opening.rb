# frozen_string_literal: true

module Loadout
  module Boot
    # How a boot may use its cache dir, decided before the store is opened, so an unusable dir
    # costs one warning from here and none from the store: refused (untrusted), read-only (not
    # writable, but a store is there to read), or read-write. Also arms the store's automatic
    # eviction.
    module StoreOpening # :nodoc:
      class << self
        # Decides how the store may be used before opening it, so an unusable cache dir costs one
        # warning from here and none from the store.
        # Returns the open store, or nil (said why, once). The block loads the Store component,
        # only once the dir passed (a refused cache never loads it).
        def call(config)
          # The cache is a code-execution boundary: nothing is read from one that fails the rule.
          report = Trust.cache_problem(config)
          if report && !Trust.unusable?(report)
            Trust.warn_refused(report, config.cache_dir, config.trust_shared_cache)
            return nil
          end
          readonly = config.readonly
          unless readonly
            # (A cache dir that passed the walk is a directory: only the access checks are left.)
            dir = config.cache_dir
            problem = report ? writable_problem(dir, config.trust_shared_cache) : access_problem(dir)
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

          store_class = yield or return nil
          store = store_class.open(config.store_path, readonly: readonly, fail_safe: true, defer_writes: true,
                                                      trust_shared_cache: config.trust_shared_cache)
          if store.respond_to?(:refused?) && store.refused?
            store.close # it said why; the caches stay off (nothing was read from it)
            return nil
          end
          arm_eviction(store, config.roots)
          store
        rescue ConfigError
          raise
        rescue StandardError => e
          warn "loadout: cache store #{config.store_path} could not be opened (#{e.class}: #{e.message}); running without the cache"
          nil
        end

        private

        # Automatic sweeps drop entries that can never be served again (see Eviction); the rule is
        # loaded only when a compaction runs, never by a boot that does not compact.
        def arm_eviction(store, roots)
          return unless store.respond_to?(:evictor=)

          eviction = nil
          store.evictor = lambda do |key, read, len|
            eviction ||= begin
              Eviction.new(roots: roots)
            rescue ScriptError, StandardError # e.g. nothing can be required any more (an
              ->(*) { false }                  # ASCII-incompatible default_external): keep all
            end
            eviction.call(key, read, len)
          end
        end

        # Returns nil when cache_dir exists (or can be made) and is writable, else a short reason.
        def writable_problem(dir, shared)
          return "a file is in the way" if File.exist?(dir) && !File.directory?(dir)

          Trust.make_dirs(dir, shared) # (Trust.cache_problem made it when it could; this raises why not)
          return "not a directory" unless File.directory?(dir)

          access_problem(dir)
        rescue SystemCallError => e
          e.class.name.split("::").last.then { |errno| "#{errno}: #{e.message.sub(/ @ .*/, "")}" }
        end

        def access_problem(dir)
          "not writable by this process" unless File.writable?(dir) && File.executable?(dir)
        end
      end
    end
  end
end

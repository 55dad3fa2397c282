# frozen_string_literal: true

module Loadout
  module Boot
    # How a boot may use its cache dir, decided before the store is opened, so an unusable dir
    # costs one warning from here and none from the store: refused (untrusted), read-only (not
    # writable, but a store is there to read), or read-write. The directory that passed the
    # trust check is held open (Trust::DirHandle) and handed to the store: the boot's every cache
    # file, at exit too, is opened and written in that directory, never through its path again.
    # Also arms the store's automatic eviction.
    module StoreOpening # :nodoc:
      class << self
        # Returns the open store, or nil (said why, once). The block loads the Store component,
        # only once the dir passed (a refused cache never loads it).
        def call(config)
          # The cache is a code-execution boundary: nothing is read from one that fails the rule.
          report, dir = Trust.cache_dir(config)
          if report && !Trust.unusable?(report)
            Trust.warn_refused(report, config.cache_dir, config.trust_shared_cache)
            return nil
          end
          if report # missing, or not a directory: nothing to read, and nowhere to write
            unless config.readonly
              warn "loadout: cache dir #{Trust::Words.shown(config.cache_dir)} is not usable " \
                   "(#{unusable_problem(config.cache_dir, config.trust_shared_cache)}); running without the cache. " \
                   "Fix: make it a writable directory (mkdir -p / chmod u+rwx), or set LOADOUT_CACHE_DIR to one"
            end
            return nil
          end
          store = open_store(config, dir) { yield }
          dir.close unless store
          store
        rescue ConfigError
          raise
        rescue StandardError => e
          dir&.close
          warn "loadout: cache store #{Trust::Words.shown(config.store_path)} could not be opened " \
               "(#{e.class}: #{e.message}); running without the cache"
          nil
        end

        private

        def open_store(config, dir)
          name = File.basename(config.store_path)
          readonly = config.readonly
          if !readonly && (problem = access_problem(config.cache_dir))
            unless dir.lstat_problem(name).nil? && readable?(dir, name)
              warn "loadout: cache dir #{Trust::Words.shown(config.cache_dir)} is not usable (#{problem}); running " \
                   "without the cache. Fix: make it a writable directory (mkdir -p / chmod u+rwx), or set " \
                   "LOADOUT_CACHE_DIR to one"
              return nil
            end
            warn "loadout: cache dir #{Trust::Words.shown(config.cache_dir)} is not writable (#{problem}); using the " \
                 "cache read-only. Fix: make the directory writable, set LOADOUT_CACHE_DIR to a writable directory, " \
                 "or set LOADOUT_READONLY=1 to silence this"
            readonly = true
          end
          # Read-only with nothing to read: there is nothing to gain, and nothing to warn about.
          # (Loadout.__boot returns before loading any of this when readonly was asked for and no
          # store file is there; this also covers a dir found unwritable, and an unreadable store.)
          return nil if readonly && !readable?(dir, name)

          store_class = yield or return nil
          store = store_class.open(config.store_path, readonly: readonly, fail_safe: true, defer_writes: true,
                                                      trust_shared_cache: config.trust_shared_cache, dir: dir)
          if store.respond_to?(:refused?) && store.refused?
            store.close # it said why; the caches stay off (nothing was read from it)
            return nil
          end
          arm_eviction(store, config.roots)
          store
        end

        # Whether the store file +name+ is there to read (a regular file this process can open).
        def readable?(dir, name)
          dir.open(name, File::RDONLY).close
          true
        rescue SystemCallError, IOError
          false
        end

        # Automatic sweeps drop entries that can never be served again (see Eviction); the rule is
        # loaded only when a compaction runs, never by a boot that does not compact.
        def arm_eviction(store, roots)
          return unless store.respond_to?(:evictor=)

          eviction = nil
          store.evictor = lambda do |key, read, len|
            eviction ||= begin
              Eviction.new(roots: roots)
            rescue ScriptError, StandardError
              # e.g. nothing can be required any more (an ASCII-incompatible default_external):
              # keep all
              ->(*) { false }
            end
            eviction.call(key, read, len)
          end
        end

        # Why a cache dir that is missing (or not a directory) cannot be used, in a few words.
        def unusable_problem(dir, shared)
          return "a file is in the way" if File.exist?(dir) && !File.directory?(dir)

          Trust.make_dirs(dir, shared) # (Trust.cache_dir made it when it could; this raises why not)
          "it could not be checked"
        rescue SystemCallError => e
          e.class.name.split("::").last.then { |errno| "#{errno}: #{Trust::Words.shown(e.message.sub(/ @ .*/, ""))}" }
        end

        def access_problem(dir)
          "not writable by this process" unless File.writable?(dir) && File.executable?(dir)
        end
      end
    end
  end
end

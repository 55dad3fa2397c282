# frozen_string_literal: true

require "loadout/instrumentation"

module Loadout
  # The persisted load path index: resolves require/load through an index of every $LOAD_PATH
  # entry with Ruby's exact precedence, restores it from the Store on a warm boot without
  # listing any directory, and answers misses without touching the filesystem.
  #
  #   Loadout::LoadPath.install!(store: store, development_mode: false)
  #   Loadout::LoadPath.find("json")  # => "/usr/lib/ruby/3.1.0/json.rb"
  #   Loadout::LoadPath.stats         # => { restore_ms: 1.2, requires: 812, hits: 640, ... }
  module LoadPath
    autoload :AppLoadPath, "loadout/load_path/app_load_path"
    autoload :Cache, "loadout/load_path/cache"
    autoload :Checker, "loadout/load_path/checker"
    autoload :Probe, "loadout/load_path/probe"
    autoload :Entry, "loadout/load_path/entry"
    autoload :Feature, "loadout/load_path/feature"
    autoload :Index, "loadout/load_path/index"
    autoload :LoadedFeatures, "loadout/load_path/loaded_features"
    autoload :Observer, "loadout/load_path/observer"
    autoload :Roots, "loadout/load_path/roots"
    autoload :Snapshot, "loadout/load_path/snapshot"
    autoload :Table, "loadout/load_path/table"
    autoload :BlobTable, "loadout/load_path/table"

    TRUST = [nil, :stable, :all, :none].freeze
    LOCKFILES = %w[Gemfile.lock gems.locked].freeze
    @cache = nil
    @kernel = Kernel # read per require: no constant lookup there (see Require)

    class << self
      # Builds or restores the index for the current $LOAD_PATH and decorates require/load.
      # +trust+: nil/:stable (default: stable entries used as stored, volatile ones checked
      # against dir mtimes), :all (nothing checked: immutable images), :none (check stable too).
      #: (?store: untyped, ?development_mode: bool, ?ignore_directories: Array[String], ?trust: Symbol?) -> void
      def install!(store: nil, development_mode: false, ignore_directories: ["node_modules"], trust: nil)
        validate!(store, development_mode, ignore_directories, trust)
        uninstall!
        __load_parts
        cache = Cache.new(store: store, development_mode: development_mode,
                          ignore: frozen_list(ignore_directories), trust: trust)
        cache.boot!
        Observer.attach
        Require.__install
        @cache = cache
        nil
      rescue ConfigError
        raise
      rescue StandardError => e
        @cache = nil
        warn "loadout: load path index disabled (#{e.class}: #{e.message}); using plain require"
        nil
      end

      # Back to plain Ruby behaviour (the decorations stay in place but pass everything through).
      def uninstall!
        @cache = nil
      end

      def installed?
        !@cache.nil?
      end

      # Returns the file require would load for +feature+ (nil if none, unknown, or not installed).
      #: (String) -> String?
      def find(feature)
        @cache&.find(feature)
      end

      # Counters for the stats printer: restore_ms, requires, hits, misses, fallbacks, rescans.
      #: () -> Hash[Symbol, untyped]
      def stats
        @cache ? @cache.stats.dup : {}
      end

      # Says what the next boot whose $LOAD_PATH is +load_path+ (at `require "loadout/setup"`)
      # will do with the index in +store+, without changing anything: :hit (restored, no
      # directory listed), :stale (restored, but the entries listed in +entries+ are listed
      # again, with the directory whose mtime changed), :miss (no index for this $LOAD_PATH).
      # +stable_roots+ are the app's (see Probe; default: this process's); +later+ are absolute
      # items the app adds after boot (checked against their per-entry listings).
      #: (store: untyped, load_path: Array[String], ?ignore_directories: Array[String], ?trust: Symbol?, ?stable_roots: Array[String]?, ?later: Array[String]) -> Hash[Symbol, untyped]
      def check(store:, load_path:, ignore_directories: ["node_modules"], trust: nil, stable_roots: nil, later: [])
        raise ConfigError.new("store", store, "a Loadout::Store") if store.nil?

        validate!(store, false, ignore_directories, trust)
        __load_parts
        checker = Checker.new(store: store, ignore: frozen_list(ignore_directories), trust: trust,
                              roots: Roots.new(stable_roots))
        checker.call(load_path, later)
      end

      # Builds and stores the index a boot with +load_path+ will restore (the same fingerprint
      # as Cache#boot! computes there: pass the app's +stable_roots+), and per-entry listings
      # for +extra+ dirs the app may add after boot. Returns { restored:, listed: } (restored:
      # the index was already there).
      #: (store: untyped, load_path: Array[String], ?ignore_directories: Array[String], ?trust: Symbol?, ?stable_roots: Array[String]?, ?extra: Array[String]) -> Hash[Symbol, untyped]
      def precompile(store:, load_path:, ignore_directories: ["node_modules"], trust: nil, stable_roots: nil, extra: [])
        validate!(store, false, ignore_directories, trust)
        __load_parts
        cache = Cache.new(store: store, development_mode: false, ignore: frozen_list(ignore_directories), trust: trust,
                          load_path: load_path.dup.freeze, roots: Roots.new(stable_roots))
        cache.boot!
        listed = cache.stats[:rescans] + cache.prefill(extra)
        { restored: cache.stats[:restored], listed: listed }
      end

      # The app's lockfile under +root+ and its digest ([path, digest]), or nil: the boot
      # record carries it, so a record made with another bundle is not trusted.
      #: (String?) -> [String, String]?
      def lock_stamp(root)
        return nil unless root

        path = LOCKFILES.map { |name| File.join(root, name) }.find { |f| File.file?(f) } or return nil
        [path, Snapshot.digest(File.binread(path))]
      rescue SystemCallError
        nil
      end

      # Records this boot's $LOAD_PATH in +store+ (Boot calls it at exit, only when the boot
      # records anything: a warm boot that hit writes nothing). +root+: the app root.
      def __record_boot(store, root) # :nodoc:
        cache = @cache or return
        record = cache.boot_record(lock_stamp(root)) or return
        Snapshot.save_boot(store, record)
      end

      # Loads every part now: an autoload fired from inside require would come back into us.
      # (Scan is left out: a warm boot never lists a directory, so it need not load it.)
      def __load_parts # :nodoc:
        [Cache, Entry, Feature, Index, LoadedFeatures, Observer, Roots, Snapshot, Table, BlobTable, Require]
      end

      def __cache # :nodoc:
        @cache
      end

      # Whether Kernel#require's next method is RubyGems' (asked per call: RubyGems may be
      # loaded after install, e.g. under --disable-gems).
      def __rubygems_via # :nodoc:
        @kernel.private_method_defined?(:gem_original_require) ? :rubygems : :plain
      end

      def __load_path_changed # :nodoc:
        @cache&.lp_changed!
      end

      def __loaded_features_changed # :nodoc:
        @cache&.lf_changed!
      end

      private

      def frozen_list(dirs)
        dirs.map { |d| d.dup.freeze }.freeze
      end

      def validate!(store, development_mode, ignore_directories, trust)
        unless [true, false].include?(development_mode)
          raise ConfigError.new("development_mode", development_mode, "true or false")
        end
        unless ignore_directories.is_a?(Array) && ignore_directories.all?(String)
          raise ConfigError.new("ignore_directories", ignore_directories, "an Array of directory names or absolute paths")
        end
        raise ConfigError.new("trust", trust, "nil, :stable, :all or :none") unless TRUST.include?(trust)

        %i[get put delete key? writable?].each do |m|
          next if store.nil? || store.respond_to?(m)

          raise ConfigError.new("store", store, "nil or a Loadout::Store (missing ##{m})")
        end
      end
    end
  end
end

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
    autoload :Cache, "loadout/load_path/cache"
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
    @cache = nil

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
                          ignore: ignore_directories.map { |d| d.dup.freeze }.freeze, trust: trust)
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
        Kernel.private_method_defined?(:gem_original_require) ? :rubygems : :plain
      end

      def __load_path_changed # :nodoc:
        @cache&.lp_changed!
      end

      def __loaded_features_changed # :nodoc:
        @cache&.lf_changed!
      end

      private

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

# frozen_string_literal: true

require "loadout/load_path/cache/resolution"
require "loadout/load_path/cache/listing"
require "loadout/load_path/cache/booting"

module Loadout
  module LoadPath
    # The installed state: entries, index, loaded-features table, options and counters. Every
    # public method takes the lock; nothing here calls require while holding it.
    #
    # Its methods live in three mixins, one per concern: Resolution (what one require or load
    # resolves to: the per-require path), Listing ($LOAD_PATH items to entries and their
    # listings) and Booting (restore or build at install, the boot record, prefill). They are
    # mixins, not collaborator objects, because the per-require path reads this object's ivars
    # directly: no delegation hop per require, and no constant named there (see Feature).
    class Cache # :nodoc:
      MISS = :miss
      # Not on $LOAD_PATH, but RubyGems might activate a gem holding it (see Require).
      RUBYGEMS_MISS = :rubygems_miss

      include Resolution
      include Listing
      include Booting

      attr_reader :stats, :mutex

      # +load_path+ and +roots+ are for `loadout precompile`, which builds the index of another
      # process's $LOAD_PATH (a fixed Array) with that process's stable roots.
      def initialize(store:, development_mode:, ignore:, trust:, load_path: nil, roots: nil)
        @store = store
        @load_path = load_path
        @dev = development_mode
        @ignore = ignore
        @trust = trust
        @mutex = Mutex.new
        @entries = {}
        @loaded = LoadedFeatures.new
        @lp_dirty = true
        @lp_size = -1
        @cwd = nil
        @lpaths = {}
        @loaded_unsure = false
        @volatile = []
        @scanned = 0
        @settled_key = nil
        @settled = false
        @booted = false
        @stats = { restore_ms: 0.0, requires: 0, hits: 0, misses: 0, fallbacks: 0, rescans: 0,
                   already_loaded: 0, restored: false }
        @roots = roots || Roots.new
        @boot_items = nil
        # Read per require as ivars, not constants (see Feature: Ruby 3.1 drops every constant
        # cache whenever a class is defined).
        @feature = Feature
        @instrumentation = Instrumentation
        @array = Array
      end

      def lp_changed!
        @lp_dirty = true
      end

      def lf_changed!
        @loaded.stale!
      end

      # Introspection: the abspath Ruby would load for +feature+ (nil when none or unknown).
      def find(feature)
        @mutex.synchronize do
          sync_state
          parsed = Feature.parse(feature)
          return nil unless parsed.is_a?(Array)

          r = @index.lookup(*parsed)
          r.is_a?(Array) ? r[0].abspath(r[1]) : nil
        end
      end

      private

      def writable?
        @store && @store.writable?
      rescue StandardError
        false
      end

      def warn_once(error)
        return if @warned

        @warned = true
        warn "loadout: load path cache could not be stored or read (#{error.class}: #{error.message}); continuing without it"
      end
    end
  end
end

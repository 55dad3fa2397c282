# frozen_string_literal: true

module Loadout
  module LoadPath
    # The index operations, bound once to the backend: the C table (ext/loadout/lp_native.c,
    # require_native.c) or its Ruby twin (RubyIndex). A table maps every name of an ordered list
    # of listings to the first position holding it; nil listings stand for items the index
    # cannot describe (see require_native.c for how a search treats them).
    module Index # :nodoc:
      class << self
        if BACKEND == :native
          def listing(files) = Native.lp_listing(files)
          def listing_size(listing) = Native.lp_listing_size(listing)
          def table(listings, bases) = Native.lp_table(listings, bases)
          # [position, name] for +feature+, :miss or :unknown_entry (nothing is loaded).
          def lookup(table, feature) = Native.lp_lookup(table, feature)
          def dirs_fresh?(base, dirs, mtimes) = Native.lp_dirs_fresh(base, dirs, mtimes)
          def dir_changed?(base, dirs, mtimes, dir) = Native.lp_dir_changed(base, dirs, mtimes, dir)
          # The LoadDirs of +load_dirs+ that may have gained a file under +dir+; nil when none.
          def changed_dirs(load_dirs, dir) = Native.lp_changed_dirs(load_dirs, dir)
          # The hook answers from +table+ (built in +cwd+ when it holds relative items) and calls
          # +state+ back; nil state: plain require.
          # (+snapshot+ is the twin's; the C hook keeps its own, and falls back to Ruby while a
          # refresh runs in any thread.)
          def activate(state, table, cwd = nil, _snapshot = nil) = Native.lp_activate(state, table, cwd)
          # Remembers $LOAD_PATH as it is now: the hook refreshes when it differs.
          def snapshot = Native.lp_snapshot
          def instrument(on) = Native.lp_instrument(on)
          def counters = Native.lp_counters
          def reset_counters = Native.lp_counters_reset
        else
          def listing(files) = RubyIndex::Listing.new(files)
          def listing_size(listing) = listing.size
          def table(listings, bases) = RubyIndex::Table.new(listings, bases)
          def lookup(table, feature) = RubyIndex.lookup(table, feature)
          def dirs_fresh?(base, dirs, mtimes) = RubyIndex.dirs_fresh?(base, dirs, mtimes)
          def dir_changed?(base, dirs, mtimes, dir) = RubyIndex.dir_changed?(base, dirs, mtimes, dir)
          def changed_dirs(load_dirs, dir) = RubyIndex.changed_dirs(load_dirs, dir)
          def activate(state, table, cwd = nil, snapshot = nil) = RubyHook.activate(state, table, cwd, snapshot)
          def snapshot = RubyHook.snapshot
          def instrument(on) = RubyHook.instrument(on)
          def counters = RubyHook.counters.dup
          def reset_counters = RubyHook.reset_counters
        end
      end

      # What the counters count, in the order both backends keep them. +direct+: absolute and
      # ./ paths, which Ruby does not search (nothing to answer).
      # +front+: requires answered above RubyGems (RubyGemsFront), +rubygems+: handed by the front
      # to RubyGems' own require, +gem_walks+: RubyGems' default-gem walks answered from the index.
      COUNTERS = %i[requires already_loaded hits misses unknown_entry stale not_string direct encoding shape
                    busy front rubygems gem_walks].freeze
      # Of those, the requires the index handed to Ruby unresolved, by reason.
      FALLBACKS = %i[unknown_entry stale not_string encoding shape busy].freeze
    end
  end
end

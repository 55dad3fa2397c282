# frozen_string_literal: true

module Loadout
  module LoadPath
    # The installed state: entries, index, loaded-features table, options and counters. Every
    # public method takes the lock; nothing here calls require while holding it.
    class Cache # :nodoc:
      MISS = :miss
      # Not on $LOAD_PATH, but RubyGems might activate a gem holding it (see Require).
      RUBYGEMS_MISS = :rubygems_miss

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

      # Restores or builds the index for the current $LOAD_PATH and stores it when it was built.
      def boot!
        t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @mutex.synchronize do
          lp = current_load_path
          # What the fingerprint saw, kept for the boot record (written at exit, only by a boot
          # that writes anyway: see LoadPath.__record_boot).
          @boot_items = lp.map { |p| p.is_a?(String) ? p : Snapshot.item_of(p) }
          fp = Snapshot.fingerprint(lp, @ignore, @trust, @roots.stable)
          restored = @store && Snapshot.load_index(@store, fp)
          restored&.each { |e| adopt_restored(e) }
          @stats[:restored] = restored ? true : false
          @scanned = 0
          refresh
          save_index(fp) if (!restored || @scanned.positive?) && writable?
          @booted = true
        end
        @stats[:restore_ms] = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1000).round(3)
        self
      end

      def lp_changed!
        @lp_dirty = true
      end

      def lf_changed!
        @loaded.stale!
      end

      # The abspath require should load, nil to hand +feature+ to Ruby unchanged, or MISS when
      # Ruby would raise LoadError. +via+: :rubygems (Kernel#require with RubyGems in the chain),
      # :plain (Kernel.require, or no RubyGems), :load (Kernel#load: exact name, no extension).
      def resolve(feature, via)
        return nil if @mutex.owned? # a require from inside our own work: let Ruby answer

        # RubyGems is asked outside the lock: its code may require files, and another thread
        # may hold Ruby's lock on one of them while waiting for ours.
        if via == :rubygems && feature.instance_of?(String)
          return fallback(feature, :default_gem) if Gem.find_unresolved_default_spec(feature)
          return fallback(feature, :unresolved_deps) unless Gem::Specification.unresolved_deps.empty?
        end
        found = @mutex.synchronize { resolve_locked(feature, via) }
        return found unless found.equal?(RUBYGEMS_MISS)

        miss(feature)
        rubygems_settled? ? MISS : RUBYGEMS_MISS
      end

      # The index sent require to +abspath+ and Ruby could not open it: the listing is out of
      # date. Marks the entry for a rescan; returns true when that is what happened.
      def stale!(abspath)
        return false if File.file?(abspath)

        @mutex.synchronize do
          # Every entry the path lies under (nested entries: /app and /app/lib) is relisted.
          @entries.values.select { |e| !e.opaque? && abspath.start_with?("#{e.base}/") }.each { |e| replace_entry(e) }
        end
        true
      end

      # This boot's $LOAD_PATH as plain data for Snapshot.save_boot: the items at install (what
      # the fingerprint covers), the absolute items added since (their listings are looked up
      # per entry), the stable roots, and +lock+ (the bundle's lockfile and its digest).
      def boot_record(lock)
        @mutex.synchronize do
          boot = @boot_items or return nil
          known = boot.to_h { |p| [p, true] }
          later = current_load_path.select { |p| p.is_a?(String) && p.start_with?("/") && !known.key?(p) }
          { load_path: boot, stable_roots: @roots.stable, later: later.uniq.first(Snapshot::KEEP_LATER), lock: lock }
        end
      end

      # Lists and stores the entries for +paths+ (absolute dirs a boot may put on $LOAD_PATH
      # after install) that have no usable stored listing yet. Returns how many were listed.
      def prefill(paths)
        @mutex.synchronize do
          before = @scanned
          paths.each do |path|
            next unless path.is_a?(String) && path.start_with?("/") && File.directory?(path)

            entry = entry_for(path)
            list!(entry) if entry && !entry.opaque? && !entry.table && !entry.files
          end
          @scanned - before
        end
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

      def resolve_locked(feature, via)
        sync_state
        @stats[:requires] += 1
        parsed = via == :load ? @feature.parse_exact(feature) : @feature.parse(feature)
        unless parsed.is_a?(@array)
          return fallback(feature, parsed) if parsed.is_a?(Symbol) && parsed != :direct && via != :load

          return nil
        end
        stem, exts = parsed
        if via != :load && (@loaded_unsure || @loaded.maybe_loaded?(stem, @lpaths))
          # Ruby answers this from its own loaded-features index, without the filesystem.
          @stats[:already_loaded] += 1
          return nil
        end

        found = lookup_with_recheck(stem, exts)
        if found.is_a?(@array)
          @stats[:hits] += 1
          @instrumentation.emit(:hit, feature, cache: :load_path) if @instrumentation.enabled?
          found[0].abspath(found[1])
        elsif found == :unknown # Index::UNKNOWN
          fallback(feature, :unknown_entry)
        else
          # load falls back to a cwd-relative file: Ruby's job. RubyGems may activate a gem.
          return nil if via == :load
          return RUBYGEMS_MISS if via == :rubygems

          miss(feature)
        end
      end

      def lookup_with_recheck(stem, exts)
        found = @index.lookup(stem, exts)
        return found unless found.nil? && @dev

        changed = @volatile.select { |e| e.maybe_changed_for?(stem) }
        return nil if changed.empty?

        changed.each { |e| replace_entry(e) }
        sync_state
        @index.lookup(stem, exts)
      end

      def miss(feature)
        @stats[:misses] += 1
        Instrumentation.emit(:miss, feature, cache: :load_path) if Instrumentation.enabled?
        MISS
      end

      public

      # Counts a miss that RubyGems then turned into a gem activation.
      def activated!(feature)
        fallback(feature, :rubygems_activation)
      end

      private

      def fallback(feature, reason)
        @stats[:fallbacks] += 1
        Instrumentation.emit(:fallback, feature, cache: :load_path, reason: reason) if Instrumentation.enabled?
        nil
      end

      # On a miss RubyGems runs Gem.try_activate(feature): the first gem spec (of
      # Gem::Specification.stubs) holding the file is activated. When every stub's gem is
      # already loaded at that very version (always so under Bundler.setup), activate is a no-op
      # and RubyGems ends in the same LoadError; otherwise it could activate a gem (or raise a
      # version conflict), so the miss goes to RubyGems and costs what it costs in plain Ruby.
      def rubygems_settled?
        stubs = Gem::Specification.stubs
        loaded = Gem.loaded_specs
        key = [stubs.object_id, stubs.size, loaded.size]
        return @settled if key == @settled_key

        @settled_key = key
        @settled = stubs.all? do |stub|
          spec = loaded[stub.name]
          spec && spec.version == stub.version
        end
      rescue StandardError
        false
      end

      def current_load_path
        @load_path || $LOAD_PATH
      end

      def sync_state
        lp = current_load_path
        if @lp_dirty || lp.size != @lp_size || (@cwd && @cwd != safe_pwd)
          refresh
        end
      end

      def safe_pwd
        Dir.pwd
      rescue SystemCallError
        nil
      end

      # Maps $LOAD_PATH to entries (reusing known ones), lists the new ones, rebuilds the views.
      def refresh
        lp = current_load_path
        @lp_dirty = false
        @lp_size = lp.size
        @cwd = nil
        @loaded_unsure = false
        seen = {}
        list = []
        lpaths = {}
        lp.each do |item|
          entry = entry_for(item) or next
          # Ruby compares realpaths: a second item with the same one can never win.
          key = entry.expanded ? entry.base : entry
          next if seen.key?(key)

          seen[key] = true
          list << entry
          if entry.expanded
            # A superset of what Ruby matches $LOADED_FEATURES against (see LoadedFeatures).
            lpaths[entry.base] = true
            lpaths[entry.expanded] = true
          else
            @loaded_unsure = true
          end
        end
        list.each { |e| list!(e) unless e.table || e.opaque? || e.empty }
        @index = Index.build(list)
        @lpaths = lpaths
        @volatile = list.select { |e| e.volatile? && !e.opaque? }
        @list = list
      end

      def entry_for(item)
        unless item.is_a?(String)
          expanded = item.respond_to?(:to_path) ? (File.expand_path(item.to_path) rescue nil) : nil
          return Entry.new(item, expanded, :opaque)
        end
        return nil if item.empty? # load.c skips empty items

        unless item.ascii_only? || (item.encoding == Encoding::UTF_8 && item.valid_encoding?)
          return Entry.new(item, (File.expand_path(item) rescue nil), :opaque)
        end
        return Entry.new(item, (File.expand_path(item) rescue nil), :opaque) if item.start_with?("~")

        if item.start_with?("/")
          @entries[item] ||= Entry.new(item.dup.freeze, File.expand_path(item), @roots.classify(File.expand_path(item)))
        else
          @cwd ||= safe_pwd or return Entry.new(item, nil, :opaque)
          expanded = File.expand_path(item, @cwd)
          @entries["#{expanded}\0relative"] ||= Entry.new(item.dup.freeze, expanded, :relative)
        end
      end

      def adopt_restored(entry)
        return if entry.kind == :relative || entry.opaque?

        if entry.volatile? || @trust == :none
          unless @trust == :all || entry.fresh?
            entry.table = nil # its own table; a rescan gives it a new one
            entry.dirs = nil
            entry.empty = nil
          end
        end
        @entries[entry.lpath] = entry
      end

      # Fills an entry's listing from the store (checked like a restored one) or by scanning.
      def list!(entry)
        if @store && entry.kind != :relative && Snapshot.load_entry(@store, entry, @ignore)
          trusted = entry.kind == :stable ? @trust != :none : @trust == :all
          return if trusted || entry.fresh?
        end

        @scanned += 1
        @stats[:rescans] += 1
        Instrumentation.emit(:rescan, entry.expanded, cache: :load_path, reason: :listing) if Instrumentation.enabled?
        return unless entry.scan!(@ignore) # unreadable parts: the entry turned :opaque

        if writable? && entry.kind != :relative
          key = Snapshot.entry_key(entry.expanded)
          @store.put(key, Snapshot.dump_entry(entry, @ignore))
          # During boot! save_index records every listing at once; later ones are recorded here.
          Snapshot.remember(@store, nil, [key]) if @booted
        end
      rescue StandardError => e
        warn_once(e)
        entry.opaque! unless entry.files
      end

      def replace_entry(entry)
        key = entry.kind == :relative ? "#{entry.expanded}\0relative" : entry.lpath
        fresh = Entry.new(entry.lpath, entry.expanded, entry.kind == :opaque ? @roots.classify(entry.expanded) : entry.kind)
        @entries[key] = fresh
        @lp_dirty = true
      end

      def writable?
        @store && @store.writable?
      rescue StandardError
        false
      end

      def save_index(fp)
        key = Snapshot.index_key(fp)
        @store.put(key, Snapshot.dump_index(fp, @list, @trust == :none))
        entry_keys = @list.filter_map { |e| Snapshot.entry_key(e.expanded) if e.kind == :stable || e.kind == :volatile }
        Snapshot.remember(@store, key, entry_keys)
      rescue StandardError => e
        warn_once(e)
      end

      def warn_once(error)
        return if @warned

        @warned = true
        warn "loadout: load path cache could not be stored or read (#{error.class}: #{error.message}); continuing without it"
      end
    end
  end
end

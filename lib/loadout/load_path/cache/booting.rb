# frozen_string_literal: true

module Loadout
  module LoadPath
    class Cache # :nodoc:
      # Once per process: restore or build the index at install, store it, and the plain data
      # the boot record and `loadout precompile` need. A mixin of Cache (same state).
      module Booting # :nodoc:
        # Restores or builds the index for the current $LOAD_PATH and stores it when it was built.
        def boot!
          t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          @mutex.synchronize do
            lp = current_load_path
            # What the fingerprint saw, kept for the boot record (written at exit, only by a boot
            # that writes anyway: see LoadPath.__record_boot).
            @boot_items = lp.map { |p| p.is_a?(String) ? p : Snapshot.item_of(p) }
            # What was loaded before install: $LOADED_FEATURES (what RubyGems and Bundler
            # required), and the files still being loaded, which Ruby adds to $LOADED_FEATURES
            # only once they finish (the main script, the app's config/boot.rb): the call stack.
            # Loadout never serves those files and the next boot loads them the same way, so
            # `loadout check` must not count them as misses. Only for a live boot (precompile
            # passes another process's $LOAD_PATH), and only a count and the stack here:
            # boot_record takes that many features at exit, in a boot that writes anyway (no
            # copy of $LOADED_FEATURES held for the whole life of the process).
            @loaded_before = @load_path ? nil : [$LOADED_FEATURES.size, caller_locations.map(&:absolute_path)]
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

        # This boot's $LOAD_PATH as plain data for Snapshot.save_boot: the items at install (what
        # the fingerprint covers), the absolute items added since (their listings are looked up
        # per entry), the stable roots, +lock+ (the bundle's lockfile and its digest), and the
        # Ruby files loaded before install (+before+: the main script first).
        def boot_record(lock)
          @mutex.synchronize do
            boot = @boot_items or return nil
            known = boot.to_h { |p| [p, true] }
            later = current_load_path.select { |p| p.is_a?(String) && p.start_with?("/") && !known.key?(p) }
            { load_path: boot, stable_roots: @roots.stable, later: later.uniq.first(Snapshot::KEEP_LATER), lock: lock,
              before: loaded_before }
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

        private

        def loaded_before
          return [] unless @loaded_before

          count, stack = @loaded_before
          loading = stack.reverse.select { |f| f.is_a?(String) && f.start_with?("/") } # main script first
          features = $LOADED_FEATURES.first(count)
          list = loading + features.select { |f| f.is_a?(String) && f.start_with?("/") && f.end_with?(".rb") }
          list.uniq.first(Snapshot::KEEP_BEFORE)
        end

        def save_index(fp)
          key = Snapshot.index_key(fp)
          @store.put(key, Snapshot.dump_index(fp, @list, @trust == :none))
          entry_keys = @list.filter_map { |e| Snapshot.entry_key(e.expanded) if e.kind == :stable || e.kind == :volatile }
          Snapshot.remember(@store, key, entry_keys)
        rescue StandardError => e
          warn_once(e)
        end
      end
    end
  end
end

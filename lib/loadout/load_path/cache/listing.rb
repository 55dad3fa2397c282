# frozen_string_literal: true

module Loadout
  module LoadPath
    class Cache # :nodoc:
      # $LOAD_PATH items to entries, and each entry's listing (restored, stored per entry, or
      # scanned); rebuilds the index when $LOAD_PATH or the cwd changed. A mixin of Cache:
      # sync_state runs on every require.
      module Listing # :nodoc:
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

        private

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
      end
    end
  end
end

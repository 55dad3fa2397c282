# frozen_string_literal: true

require "rbconfig"

module Loadout
  module LoadPath
    # Persistence of the resolved index in the Store (keys under "lp/"):
    # - "lp/idx/<fingerprint key>": the whole index for one $LOAD_PATH: entries (lpath, kind,
    #   table, local index, and for volatile ones their dirs + mtimes) and each table as buckets
    #   (BlobTable). Restoring it does no getdents and, for stable entries, no stat at all;
    # - "lp/ent/<expanded path>": one entry's listing, so a $LOAD_PATH that differs by a few items
    #   (a gem added to the Gemfile, a push after boot) rescans only the new items;
    # - "lp/boot": the app's $LOAD_PATH as the last boot that wrote anything saw it (at install,
    #   plus the items it added later), its stable roots, its Gemfile.lock digest and the Ruby
    #   files it loaded before install, so `loadout check` and `loadout precompile` can work for
    #   the app's $LOAD_PATH, not the CLI's.
    # Values are Marshal dumps tagged with FORMAT and checked field by field: anything that does
    # not decode or does not match is a miss, never an error.
    module Snapshot # :nodoc:
      FORMAT = 4 # bump on ANY change to the stored layout; old values are then ignored
      # (4: runs of volatile entries share one table; an index stored by 3 had one per entry)
      INDEX_PREFIX = "lp/idx/"
      ENTRY_PREFIX = "lp/ent/"
      # The store is shared by every process of an app (server, console, rake, tests with temp
      # dirs on $LOAD_PATH): only the most recently written indexes and listings are kept.
      RECENT_KEY = "lp/recent"
      BOOT_KEY = "lp/boot"
      KEEP_LATER = 256 # items added after boot kept in the boot record
      KEEP_BEFORE = 4096 # files loaded before install kept in the boot record
      KEEP_INDEXES = 8
      KEEP_ENTRIES = 4096

      class << self
        # Everything the stored index depends on. Compared whole on restore.
        def fingerprint(load_path, ignore, trust, stable_roots)
          items = load_path.map { |p| p.is_a?(String) ? p.b : item_of(p) }
          Marshal.dump([FORMAT, RUBY_VERSION, RUBY_REVISION, RUBY_PLATFORM, RbConfig::CONFIG["DLEXT"],
                        ignore, trust, stable_roots, items])
        end

        # How the fingerprint sees a $LOAD_PATH item that is not a String (also what the boot
        # record stores for it: the fingerprint of the recorded list is then the same).
        def item_of(item)
          "#<#{item.class}>"
        end

        # A short store key for +fp+; a collision is only a miss, the value holds the whole fp.
        def index_key(fp)
          "#{INDEX_PREFIX}#{digest(fp)}"
        end

        # A cheap, process-independent digest of +bytes+ (String#hash is seeded per process).
        def digest(bytes)
          weighted = 0
          i = 0
          step = 4096
          while i < bytes.bytesize
            weighted = (weighted * 31 + bytes.byteslice(i, step).sum(32)) & 0xffff_ffff_ffff
            i += step
          end
          format("%x.%x.%x", bytes.bytesize, bytes.sum(32), weighted)
        end

        # Stores +record+ (a Hash of plain data, see Cache#boot_record) unless it is already
        # there: a boot that saw the same $LOAD_PATH as the recorded one appends nothing.
        def save_boot(store, record)
          raw = Marshal.dump([FORMAT, record])
          store.put(BOOT_KEY, raw) unless store.get(BOOT_KEY) == raw
        end

        # The boot record as a Hash with :load_path, :stable_roots, :later, :lock and :before;
        # nil if absent or unusable. :before is optional (a record written before it existed has
        # none, and needs no FORMAT bump, which would drop every stored index): read nil as [].
        def load_boot(store)
          raw = store.get(BOOT_KEY) or return nil
          format_v, record = Marshal.load(raw) # rubocop:disable Security/MarshalLoad
          return nil unless format_v == FORMAT && record.is_a?(Hash)
          return nil unless %i[load_path stable_roots later].all? { |k| record[k].is_a?(Array) && record[k].all?(String) }
          return nil unless record[:before].nil? || (record[:before].is_a?(Array) && record[:before].all?(String))

          lock = record[:lock]
          return nil unless lock.nil? || (lock.is_a?(Array) && lock.size == 2 && lock.all?(String))

          record
        rescue StandardError, TypeError, ArgumentError
          nil
        end

        # Returns [entries, tables_restored] or nil.
        def load_index(store, fp)
          raw = store.get(index_key(fp)) or return nil
          format_v, stored_fp, metas, tables = Marshal.load(raw) # rubocop:disable Security/MarshalLoad
          return nil unless format_v == FORMAT && stored_fp == fp && metas.is_a?(Array) && tables.is_a?(Array)

          by_table = Hash.new { |h, k| h[k] = [] }
          entries = metas.map do |lpath, expanded, kind, table_no, local, dirs, mtimes, base, empty|
            entry = Entry.new(lpath, expanded, kind)
            entry.empty = empty == true
            entry.dirs = dirs
            entry.mtimes = mtimes
            entry.base = base if base && kind == :stable
            by_table[table_no][local] = entry if table_no
            entry
          end
          by_table.each do |table_no, list|
            mask, buckets = tables.fetch(table_no)
            # Locals missing from the list (entries that were not in this $LOAD_PATH) stay holes.
            BlobTable.new(list.map { |e| e || Entry.new("", "", :opaque) }, mask, buckets)
          end
          entries
        rescue StandardError, TypeError, ArgumentError
          nil
        end

        def dump_index(fp, entries, keep_dirs)
          tables = []
          table_no = {}.compare_by_identity
          metas = entries.map do |e|
            no = nil
            if e.table && e.kind != :relative && !e.opaque?
              no = table_no[e.table] ||= (tables << e.table.to_blob).size - 1
            end
            stamp = keep_dirs || e.kind == :volatile
            [e.lpath, e.expanded, e.kind, no, no && e.local, stamp ? e.dirs : nil, stamp ? e.mtimes : nil,
             e.kind == :stable ? e.base : nil, e.empty == true]
          end
          Marshal.dump([FORMAT, fp, metas, tables])
        end

        # Records +index_key+ and +entry_keys+ as the newest and deletes what fell off the lists.
        def remember(store, index_key, entry_keys)
          indexes, entries = begin
            list = Marshal.load(store.get(RECENT_KEY) || Marshal.dump([[], []])) # rubocop:disable Security/MarshalLoad
            list.is_a?(Array) && list.size == 2 && list.all?(Array) ? list : [[], []]
          rescue StandardError, TypeError, ArgumentError
            [[], []]
          end
          indexes = [index_key] + (indexes - [index_key]) if index_key
          entries = entry_keys + (entries - entry_keys)
          (indexes[KEEP_INDEXES..] || []).each { |k| store.delete(k) }
          (entries[KEEP_ENTRIES..] || []).each { |k| store.delete(k) }
          store.put(RECENT_KEY, Marshal.dump([indexes.first(KEEP_INDEXES), entries.first(KEEP_ENTRIES)]))
        end

        def entry_key(expanded)
          "#{ENTRY_PREFIX}#{expanded}".b
        end

        def dump_entry(entry, ignore)
          Marshal.dump([FORMAT, ignore, entry.expanded, entry.files, entry.dirs, entry.mtimes])
        end

        # Fills +entry+ from a stored listing; false when absent or not usable.
        def load_entry(store, entry, ignore)
          raw = store.get(entry_key(entry.expanded)) or return false
          format_v, stored_ignore, expanded, files, dirs, mtimes = Marshal.load(raw) # rubocop:disable Security/MarshalLoad
          return false unless format_v == FORMAT && stored_ignore == ignore && expanded == entry.expanded &&
                              files.is_a?(Array) && dirs.is_a?(Array) && mtimes.is_a?(Array)

          entry.files = files
          entry.empty = files.empty?
          entry.dirs = dirs
          entry.mtimes = mtimes
          true
        rescue StandardError, TypeError, ArgumentError
          false
        end
      end
    end
  end
end

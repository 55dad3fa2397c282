# frozen_string_literal: true

module Loadout
  module LoadPath
    # Feature -> abspath for the current $LOAD_PATH, as an ordered list of views. A view is a
    # range [lo, hi] of one table's entries; the list follows $LOAD_PATH order, so a change that
    # keeps runs of entries together (push, unshift, insert, a rescanned app dir) reuses every
    # table and only lists the new entries.
    #
    # A table answers "lowest local index holding rel". In a view that answer is definitive when
    # it is >= lo (a hit when <= hi, else a miss); when it is < lo the file sits in an entry that
    # is no longer in front of this view (deleted or moved), so whether lo..hi holds it too is
    # unknown and the caller falls back to Ruby.
    class Index # :nodoc:
      View = Struct.new(:table, :lo, :hi)
      OPAQUE = View.new(nil, 0, -1).freeze
      UNKNOWN = :unknown

      attr_reader :views

      def initialize(views)
        @views = views.freeze
        @blob = BlobTable # a require names no constant (Ruby 3.1 drops their caches per class)
        @unknown = UNKNOWN
      end

      # Returns [entry, rel] for the file Ruby would pick, nil when no entry has one, or UNKNOWN.
      # +exts+ are tried in order, each over the whole $LOAD_PATH: x.rb in any entry beats x.so
      # in an earlier one (Ruby 3.1 load.c rb_find_file_ext loops extensions outside and entries
      # inside; the differential test "an extension in an earlier entry ..." pins this down).
      # A blob table's bucket hash depends on the stem only (each ext is one dot and a name, see
      # Feature), so it is computed once for all exts.
      def lookup(stem, exts)
        hash = nil
        exts.each do |ext|
          if ext.empty?
            found = lookup_exact(stem)
          else
            hash ||= @blob.hash_of(stem)
            found = lookup_exact("#{stem}#{ext}", hash)
          end
          return found unless found.nil?
        end
        nil
      end

      # The first entry holding exactly +rel+ (what load and rb_find_file look for). +hash+:
      # BlobTable.hash_of(the stem of +rel+), when the caller has it.
      def lookup_exact(rel, hash = nil)
        needle = nil
        @views.each do |view|
          table = view.table or return @unknown
          if needle.nil? && table.blob?
            needle = @blob.needle(rel)
            hash ||= @blob.hash_of(@blob.stem_of(rel))
          end
          m = table.min(rel, needle, hash) or next
          next if m > view.hi
          return @unknown if m < view.lo

          return [table.entries[m], rel]
        end
        nil
      end

      # Builds views for +entries+ (already reduced to what Ruby searches: no "" items, no
      # repeated expanded path). Entries without a table get new ones: every run of consecutive
      # such entries shares one, volatile or stable, so a lookup visits one table per run, not
      # one per app directory (an app with 200 component lib dirs made each require search 200
      # tables). A volatile entry rescanned later gets a table of its own and leaves its old
      # listing in the shared one as a hole: a file only that old listing had makes the views
      # after it answer UNKNOWN (Ruby resolves it), never a wrong entry.
      def self.build(entries)
        views = []
        pending = []
        flush = lambda do
          unless pending.empty?
            table = Table.new(pending)
            views << View.new(table, 0, pending.size - 1)
            pending = []
          end
        end
        entries.each do |entry|
          if entry.empty && !entry.opaque?
            next # holds nothing: cannot win, need not be searched
          elsif entry.opaque?
            flush.call
            views << OPAQUE
          elsif entry.table
            flush.call
            last = views.last
            if last && last.table.equal?(entry.table) && last.hi == entry.local - 1
              last.hi = entry.local
            else
              views << View.new(entry.table, entry.local, entry.local)
            end
          else
            pending << entry
          end
        end
        flush.call
        new(views)
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  module LoadPath
    # The directory one $LOAD_PATH item names, as the index sees it (a load dir). +kind+ says how
    # far its listing can be trusted:
    # - :stable   under the Ruby prefix, a Gem.path gem dir or the bundle path: its file set only
    #             changes with a new path, so a stored listing is used without any syscall;
    # - :volatile anything else (app dirs): a stored listing is checked against the recorded
    #             mtime of every directory in its tree;
    # - :opaque   an item the index cannot describe (not a String, relative, "~", not ASCII, a
    #             directory it could not read): a search that reaches it is left to Ruby.
    # +expanded+ is File.expand_path of the item (the store key, and what says stable or not);
    # +base+ the directory Ruby joins features to: Ruby builds its expanded load path with
    # realpath (load.c rb_construct_expanded_load_path: rb_check_realpath, else the item as is),
    # so a file found through a symlinked item is recorded under the item's realpath. A stable
    # dir's base comes from the store (see Roots#trusts_base?); an app dir's is computed.
    class LoadDir # :nodoc:
      # Scan errors that cannot hide a file Ruby could open: a broken link or a vanished file is
      # as unopenable for Ruby; a name that is not UTF-8 is only reachable by a feature that is
      # not ASCII either, and those go to Ruby. Anything else (EACCES, a directory loop that Ruby
      # would happily walk through) makes the dir :opaque.
      HARMLESS_ERRORS = %i[invalid_encoding enoent eloop enotdir].freeze

      # A directory whose mtime is this close to the scan may still change within the same
      # timestamp tick (file timestamps use a coarse clock): its recorded mtime is replaced by
      # RACY, which never matches, so the next check rescans it (git's "racily clean" rule).
      RACY_NS = 1_000_000_000
      RACY = -1

      attr_reader :item, :expanded, :source, :kind
      # +listing+: the index's form of the files (Index.listing); +dirs+/+mtimes+: the stored
      # blobs of the tree's directories (see Codec), for freshness checks.
      attr_accessor :base, :listing, :size, :dirs, :mtimes

      # +source+: what Ruby takes the realpath of (the item, joined to the cwd when relative).
      def initialize(item, expanded, kind, source = expanded)
        @item = item
        @expanded = expanded
        @source = source
        @base = nil
        @kind = kind
        @listing = nil
        @size = 0
        @dirs = nil
        @mtimes = nil
        @mtime_map = nil
      end

      def opaque?
        @kind == :opaque
      end

      def volatile?
        @kind == :volatile
      end

      def stable?
        @kind == :stable
      end

      def opaque!
        @kind = :opaque
        @listing = nil
      end

      # Holds no requirable file: cannot win a search, need not be searched.
      def empty?
        @size.zero?
      end

      # Takes a decoded stored listing (Codec::Decoded).
      def adopt(decoded)
        @base = decoded.base.frozen? ? decoded.base : decoded.base.dup.freeze
        @listing = Index.listing(decoded.files)
        @size = Index.listing_size(@listing)
        @dirs = decoded.dirs
        @mtimes = decoded.mtimes
        @mtime_map = nil
      end

      # Forgets the listing: the next refresh lists the directory again.
      def forget!
        @listing = nil
        @mtime_map = nil
      end

      # Lists the tree. Returns [files, dirs, mtimes] (Arrays) or nil when the listing cannot be
      # trusted (the dir turned :opaque).
      def scan(ignore)
        started = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
        result = Scan.call(@base, ignore: ignore)
        if result.errors.any? { |(_, reason)| !HARMLESS_ERRORS.include?(reason) }
          opaque!
          return nil
        end
        limit = started - RACY_NS
        [result.files, result.dirs, result.dir_mtimes.map { |m| m >= limit ? RACY : m }]
      end

      # The stored listing still describes the tree: every directory (empty ones included, so a
      # file added anywhere is noticed) has its recorded mtime. A root that was missing must
      # still be missing.
      def fresh?
        return !File.directory?(@base) if @dirs.nil? || @dirs.empty?

        Index.dirs_fresh?(@base, @dirs, @mtimes)
      end

      # What fresh? would find changed, for `loadout check`: up to +limit+ [dir, why] pairs.
      def changes(limit = 3)
        if @dirs.nil? || @dirs.empty?
          return File.directory?(@base) ? [[@base, "created since it was listed"]] : []
        end

        found = []
        mtime_map.each do |rel, recorded|
          path = rel.empty? ? @base : "#{@base}/#{rel}"
          now = mtime_ns(path)
          next if now == recorded

          found << [path, why_changed(now, recorded)]
          break if found.size >= limit
        end
        found
      end

      # Could a file under +dir+ (relative, "" for the root) have appeared since the listing? One
      # stat: the deepest recorded directory on the way (creating a dir changes its parent).
      def maybe_changed_for?(dir)
        return File.directory?(@base) if @dirs.nil? || @dirs.empty?

        Index.dir_changed?(@base, @dirs, @mtimes, dir == "." ? "" : dir)
      end

      # The path Ruby would record for +rel+ found in this dir.
      def abspath(rel)
        @base == "/" ? "/#{rel}" : "#{@base}/#{rel}"
      end

      private

      def mtime_map
        @mtime_map ||= Codec.names(@dirs).zip(@mtimes.unpack("q*")).to_h
      end

      def why_changed(now, recorded)
        return "removed" if now.nil?
        return "listed within 1 s of its last change" if recorded == RACY

        "mtime changed"
      end

      def mtime_ns(path)
        st = File.stat(path)
        return nil unless st.directory?

        (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec
      rescue SystemCallError
        nil
      end
    end
  end
end

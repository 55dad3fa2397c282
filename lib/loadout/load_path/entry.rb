# frozen_string_literal: true

module Loadout
  module LoadPath
    # One $LOAD_PATH item. +kind+ says how far its listing can be trusted:
    # - :stable   under the Ruby prefix, a Gem.path gem dir or the bundle path: its file set only
    #             changes with a new path, so a stored listing is used without any syscall;
    # - :volatile anything else (app dirs): a stored listing is checked against recorded dir mtimes;
    # - :relative a relative item: expanded against the cwd, never stored, rescanned on chdir;
    # - :opaque   an item the index cannot describe (not a String, "~", bad encoding, a directory
    #             it could not read): a lookup that reaches it falls back to Ruby.
    class Entry # :nodoc:
      attr_reader :lpath, :expanded, :kind
      attr_accessor :table, :local, :files, :dirs, :mtimes
      # True when the listing holds no file (site dirs often do): such an entry can never win,
      # so the index leaves it out of the search (it still counts for $LOADED_FEATURES).
      attr_accessor :empty

      # Scan errors that cannot hide a file Ruby could open: a broken link or a vanished file is
      # as unopenable for Ruby; a name that is not UTF-8 is only reachable by a feature that is
      # not UTF-8 either, and those fall back. Anything else (EACCES, a directory loop that Ruby
      # would happily walk through) makes the entry :opaque.
      HARMLESS_ERRORS = %i[invalid_encoding enoent eloop enotdir].freeze

      # A directory whose mtime is this close to the scan may still change within the same
      # timestamp tick (file timestamps use a coarse clock): its recorded mtime is replaced by
      # RACY, which never matches, so the next check rescans it (git's "racily clean" rule).
      RACY_NS = 1_000_000_000
      RACY = -1

      def initialize(lpath, expanded, kind)
        @lpath = lpath
        @expanded = expanded
        @kind = kind
        @table = nil
        @local = nil
        @files = nil
        @dirs = nil
        @mtimes = nil
        @mtime_map = nil
        @base = nil
      end

      def opaque?
        @kind == :opaque
      end

      def opaque!
        @kind = :opaque
      end

      def volatile?
        @kind == :volatile || @kind == :relative
      end

      # Lists the directory tree (once). Returns false when the listing cannot be trusted.
      def scan!(ignore)
        started = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
        result = Scan.call(@expanded, ignore: ignore)
        if result.errors.any? { |(_, reason)| !HARMLESS_ERRORS.include?(reason) }
          opaque!
          return false
        end
        # A file name holding a newline cannot be stored in a table; no feature can name it
        # (such features fall back), so leaving it out changes no answer.
        @files = result.files.reject { |f| f.include?("\n") }
        @empty = @files.empty?
        @dirs = result.dirs
        limit = started - RACY_NS
        @mtimes = result.dir_mtimes.map { |m| m >= limit ? RACY : m }
        @mtime_map = nil
        true
      end

      # The listing's dirs still have their recorded mtimes (every dir, empty ones included, so
      # a file added anywhere is noticed). A root that was missing must still be missing.
      def fresh?
        return !File.directory?(@expanded) if @dirs.nil? || @dirs.empty?

        @dirs.each_with_index do |rel, i|
          return false unless mtime_ns(rel.empty? ? @expanded : "#{@expanded}/#{rel}") == @mtimes[i]
        end
        true
      end

      # What fresh? would find changed, for `loadout check`: up to +limit+ [dir, why] pairs.
      def changes(limit = 3)
        if @dirs.nil? || @dirs.empty?
          return File.directory?(@expanded) ? [[@expanded, "created since it was listed"]] : []
        end

        found = []
        @dirs.each_with_index do |rel, i|
          path = rel.empty? ? @expanded : "#{@expanded}/#{rel}"
          now = mtime_ns(path)
          next if now == @mtimes[i]

          found << [path, why_changed(now, @mtimes[i])]
          break if found.size >= limit
        end
        found
      end

      # Development mode: could a file for +stem+ have appeared since the listing? One stat: the
      # deepest recorded directory on the way to the file (creating a dir changes its parent).
      def maybe_changed_for?(stem)
        return true if @dirs.nil?
        return File.directory?(@expanded) if @dirs.empty?

        @mtime_map ||= @dirs.each_with_index.to_h { |rel, i| [rel, @mtimes[i]] }
        rel = File.dirname(stem)
        rel = "" if rel == "."
        until @mtime_map.key?(rel)
          slash = rel.rindex("/")
          rel = slash ? rel[0, slash] : ""
        end
        mtime_ns(rel.empty? ? @expanded : "#{@expanded}/#{rel}") != @mtime_map[rel]
      end

      # The directory Ruby joins features to. Ruby 3.1 builds its expanded load path with
      # realpath (load.c rb_construct_expanded_load_path: rb_check_realpath, else the item as
      # is), so a feature found through a symlinked entry is recorded in $LOADED_FEATURES under
      # the entry's realpath. Stable entries keep the stored value; others compute it per boot.
      def base
        @base ||= begin
          File.realpath(@expanded)
        rescue SystemCallError, ArgumentError, TypeError
          @lpath.is_a?(String) ? @lpath : @expanded
        end
      end

      attr_writer :base

      def abspath(rel)
        b = base
        b == "/" ? "/#{rel}" : "#{b}/#{rel}"
      end

      private

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

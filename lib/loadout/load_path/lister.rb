# frozen_string_literal: true

module Loadout
  module LoadPath
    # Makes the LoadDir for a $LOAD_PATH item and fills its listing: from the store when the
    # stored one can be trusted (stable dirs) or is still fresh (app dirs: every directory's mtime
    # unchanged), else by scanning the directory, which is then stored for the next process.
    #
    # Relocation (a cache built with the app and its bundle at one path and used at another: a
    # Docker build stage, a CI cache restored into a fresh clone): a listing is also stored under
    # a name that does not depend on where it is (Codec.moved_key): a gem dir's under its gem
    # home ("gems/rack-3.0.8/lib", Roots#gem_relative), an app dir's relative to the app root.
    # Where the dir has no listing of its own, that one stands in: a gem dir is used as stored,
    # at its new place (the same gem version holds the same files); an app dir is listed again
    # (its mtimes are a fresh clone's) and counted as revalidated when it holds the same files.
    class Lister # :nodoc:
      attr_reader :restored, :scanned, :revalidated

      # +writable+: whether scans are stored (a read-only store or no store: never). +app_root+:
      # the app root, for the relocatable copies of listings (nil: none).
      def initialize(store:, roots:, ignore:, trust:, app_root: nil)
        @store = store
        @roots = roots
        @ignore = ignore
        @ignore_paths = ignore.select { |i| i.start_with?("/") }.freeze
        @trust = trust
        @app_root = app_root && app_root != "/" ? app_root.chomp("/").b.freeze : nil
        @restored = 0
        @scanned = 0
        @revalidated = 0
        @warned = false
      end

      # A String item Ruby expands against the cwd.
      def self.relative?(item)
        item.instance_of?(String) && !item.empty? && !item.start_with?("/", "~")
      end

      # The LoadDir for +item+ (no listing yet); relative items are expanded in +cwd+. Items the
      # index does not model are :opaque.
      def load_dir(item, cwd = nil)
        return LoadDir.new(item, nil, :opaque) unless modelled?(item)
        return LoadDir.new(item, nil, :opaque) unless item.start_with?("/") || cwd

        item = item.dup.freeze unless item.frozen? # (the app may change its String later)
        source = item.start_with?("/") ? item : "#{cwd}/#{item}".freeze
        expanded = Lister.expanded?(source) ? source : File.expand_path(source).freeze
        LoadDir.new(item, expanded, @roots.classify(expanded), source)
      end

      # Whether File.expand_path(+path+) is +path+ itself: absolute, no empty, "." or ".."
      # component, no trailing "/" (an item is most often such a path: no copy of it is needed).
      def self.expanded?(path)
        path.start_with?("/") && !path.end_with?("/", "/.", "/..") &&
          !path.include?("//") && !path.include?("/./") && !path.include?("/../")
      end

      # Fills +dir+'s base and listing (or turns it :opaque).
      def fill(dir)
        decoded = stored(dir)
        if decoded && base_holds?(dir, decoded.base)
          dir.adopt(decoded)
          return @restored += 1 if trusted?(dir) || dir.fresh?
        elsif !decoded && (moved = moved_listing(dir))
          return @restored += 1 if adopt_moved(dir, moved)

          return scan(dir, moved)
        end
        dir.base ||= realpath(dir.source).freeze
        scan(dir)
      rescue StandardError => e
        warn_once(e)
        dir.opaque!
      end

      # Whether the listing stored for +dir+ would be used as is (for `loadout check`); fills
      # what it found (a stale listing included) into +dir+. A listing moved from another place
      # counts when it is used as stored (a stable dir) or when listing the dir again finds the
      # same files (an app dir: what a boot does, see the class comment).
      def usable?(dir)
        decoded = stored(dir)
        if !decoded && (moved = moved_listing(dir))
          return true if adopt_moved(dir, moved)

          require_relative "../scan" unless defined?(Loadout::Scan) && !Loadout.autoload?(:Scan)
          files, = dir.scan(@ignore)
          return files && Codec.join(files) == moved.files
        end
        return false unless decoded
        return false unless base_holds?(dir, decoded.base)

        dir.adopt(decoded)
        trusted?(dir) || dir.fresh?
      end

      private

      # ASCII Strings without NUL, not "~": what the index can join a feature to. "~" depends on
      # $HOME at each search, other objects on their #to_path at each require.
      def modelled?(item)
        item.instance_of?(String) && !item.start_with?("~") && item.ascii_only? && !item.include?("\0")
      end

      # load.c: rb_check_realpath, else the item as is (a relative one then joins like an
      # expanded one: Ruby expands the joined path).
      def realpath(path)
        File.realpath(path)
      rescue SystemCallError, ArgumentError
        path
      end

      def stored(dir)
        return nil unless @store

        raw = @store.get(Codec.key(dir.expanded)) or return nil
        Codec.decode(raw, @ignore)
      end

      # The path of +expanded+ relative to the app root ("" for the root), or nil.
      def app_relative(expanded)
        root = @app_root or return nil
        return "" if expanded == root

        expanded.start_with?("#{root}/") ? expanded.byteslice(root.bytesize + 1, expanded.bytesize) : nil
      end

      # The name of +dir+'s listing that does not depend on where it is (see the class
      # comment), or nil.
      def moved_key(dir)
        if dir.stable? && (rel = @roots.gem_relative(dir.expanded))
          Codec.moved_key("gem", rel)
        elsif (rel = app_relative(dir.expanded))
          Codec.moved_key("app", rel)
        end
      end

      # The listing stored under +dir+'s moved key, made elsewhere (the Decoded, with the
      # dir's realpath filled in), or nil.
      def moved_listing(dir)
        return nil unless @store && (key = moved_key(dir))

        raw = @store.get(key) or return nil
        decoded = Codec.decode(raw, @ignore) or return nil
        dir.base ||= realpath(dir.source).freeze
        return nil if decoded.base == dir.base # listed here: the dir's own key is the one to use

        decoded
      end

      # A stable dir's moved listing is used as stored, at the dir's base: the same gem version
      # holds the same files wherever it is installed. Returns true when adopted.
      def adopt_moved(dir, moved)
        return false unless dir.stable? && trusted?(dir)

        base = dir.base
        dir.adopt(Codec::Decoded.new(base, moved.files, moved.dirs, moved.mtimes))
        @store.put(Codec.key(dir.expanded), Codec.rebase(moved, base, @ignore)) if writable?
        true
      end

      def trusted?(dir)
        dir.stable? ? @trust != :none : @trust == :all
      end

      # Whether +base+ (the realpath stored with the listing) is still the dir's realpath:
      # vouched for by its stable root (no syscall per gem), else computed (app dirs: a
      # symlinked release dir may point elsewhere now).
      def base_holds?(dir, base)
        return true if trusted?(dir) && dir.stable? && @roots.trusts_base?(dir.expanded, base)

        (dir.base ||= realpath(dir.source).freeze) == base
      end

      # Lists +dir+'s tree and stores it (under its moved key too, for a copy of the bundle or
      # the app elsewhere). With +moved+ (a listing made elsewhere), the same files make it a
      # revalidation, not a rescan.
      def scan(dir, moved = nil)
        if Instrumentation.enabled?
          Instrumentation.emit(:rescan, dir.base, cache: :load_path, reason: moved ? :moved : :listing)
        end
        unless dir.base.ascii_only? && dir.base.start_with?("/") &&
               @ignore_paths.none? { |p| p == dir.base || p.start_with?("#{dir.base}/") }
          @scanned += 1
          return dir.opaque!
        end

        require_relative "../scan" unless defined?(Loadout::Scan) && !Loadout.autoload?(:Scan)
        files, dirs, mtimes = dir.scan(@ignore)
        same = moved && files && Codec.join(files) == moved.files
        same ? @revalidated += 1 : @scanned += 1
        return unless files # unreadable parts: the dir turned :opaque

        raw = Codec.encode(dir.base, files, dirs, mtimes, @ignore)
        dir.adopt(Codec.decode(raw, @ignore))
        return unless writable?

        @store.put(Codec.key(dir.expanded), raw)
        key = !moved && moved_key(dir)
        @store.put(key, raw) if key
      end

      def writable?
        @store && @store.writable?
      rescue StandardError
        false
      end

      def warn_once(error)
        return if @warned

        @warned = true
        warn "loadout: load path listing could not be stored or read (#{error.class}: #{error.message}); " \
             "continuing without it"
      end
    end
  end
end

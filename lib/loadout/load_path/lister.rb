# frozen_string_literal: true

module Loadout
  module LoadPath
    # Makes the Entry for a $LOAD_PATH item and fills its listing: from the store when the stored
    # one can be trusted (stable entries) or is still fresh (app dirs: every directory's mtime
    # unchanged), else by scanning the directory, which is then stored for the next process.
    class Lister # :nodoc:
      attr_reader :restored, :scanned

      # +writable+: whether scans are stored (a read-only store or no store: never).
      def initialize(store:, roots:, ignore:, trust:)
        @store = store
        @roots = roots
        @ignore = ignore
        @ignore_paths = ignore.select { |i| i.start_with?("/") }.freeze
        @trust = trust
        @restored = 0
        @scanned = 0
        @warned = false
      end

      # A String item Ruby expands against the cwd.
      def self.relative?(item)
        item.instance_of?(String) && !item.empty? && !item.start_with?("/", "~")
      end

      # The Entry for +item+ (no listing yet); relative items are expanded in +cwd+. Items the
      # index does not model are :opaque.
      def entry(item, cwd = nil)
        return Entry.new(item, nil, :opaque) unless modelled?(item)
        return Entry.new(item, nil, :opaque) unless item.start_with?("/") || cwd

        item = item.dup.freeze
        source = item.start_with?("/") ? item : "#{cwd}/#{item}"
        expanded = File.expand_path(source).freeze
        Entry.new(item, expanded, @roots.classify(expanded), source)
      end

      # Fills +entry+'s base and listing (or turns it :opaque).
      def fill(entry)
        decoded = stored(entry)
        if decoded && base_holds?(entry, decoded.base)
          entry.adopt(decoded)
          return @restored += 1 if trusted?(entry) || entry.fresh?
        end
        entry.base ||= realpath(entry.source).freeze
        scan(entry)
      rescue StandardError => e
        warn_once(e)
        entry.opaque!
      end

      # Whether the listing stored for +entry+ would be used as is (for `loadout check`); fills
      # what it found (a stale listing included) into +entry+.
      def usable?(entry)
        decoded = stored(entry) or return false
        return false unless base_holds?(entry, decoded.base)

        entry.adopt(decoded)
        trusted?(entry) || entry.fresh?
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

      def stored(entry)
        return nil unless @store

        raw = @store.get(Codec.key(entry.expanded)) or return nil
        Codec.decode(raw, @ignore)
      end

      def trusted?(entry)
        entry.stable? ? @trust != :none : @trust == :all
      end

      # Whether +base+ (the realpath stored with the listing) is still the entry's realpath:
      # vouched for by its stable root (no syscall per gem), else computed (app dirs: a
      # symlinked release dir may point elsewhere now).
      def base_holds?(entry, base)
        return true if trusted?(entry) && entry.stable? && @roots.trusts_base?(entry.expanded, base)

        (entry.base ||= realpath(entry.source).freeze) == base
      end

      def scan(entry)
        @scanned += 1
        if Instrumentation.enabled?
          Instrumentation.emit(:rescan, entry.base, cache: :load_path, reason: :listing)
        end
        return entry.opaque! unless entry.base.ascii_only? && entry.base.start_with?("/")
        return entry.opaque! if @ignore_paths.any? { |p| p == entry.base || p.start_with?("#{entry.base}/") }

        require_relative "../scan" unless defined?(Loadout::Scan) && !Loadout.autoload?(:Scan)
        files, dirs, mtimes = entry.scan(@ignore)
        return unless files # unreadable parts: the entry turned :opaque

        raw = Codec.encode(entry.base, files, dirs, mtimes, @ignore)
        entry.adopt(Codec.decode(raw, @ignore))
        @store.put(Codec.key(entry.expanded), raw) if writable?
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

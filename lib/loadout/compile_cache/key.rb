# frozen_string_literal: true

require_relative "xxh64"

module Loadout
  module CompileCache
    # Store keys: "cc/<kind>/<variant>/<relative key>".
    #
    # - The variant is a digest of everything that changes what a handler would produce: Ruby
    #   engine, version, revision and platform, loadout's format, and the handler's options (the
    #   ISeq compile options, the YAML method and keywords, ...). RUBY_DESCRIPTION is left out on
    #   purpose: it says "+YJIT" under --yjit, and YJIT and interpreter processes produce the
    #   same instruction sequences, so they share entries. Different Rubies get different
    #   variants and so live side by side instead of evicting each other.
    # - The relative key is the path relative to the deepest root containing it, prefixed by a
    #   tag naming that root ("~" for the first root, the application; the directory's basename
    #   for the others, e.g. "rack-3.0.8" for a gem dir). A checkout moved to another directory
    #   keeps its keys. A path under no root is keyed by its absolute path.
    class Key # :nodoc:
      PREFIX = "cc/"
      STAT_PREFIX = "cc/s/"
      # "st/seen/<variant>": the day a boot last used the variant, and that boot's roots (read by
      # Eviction; written by Boot at exit, at most once a day per variant).
      SEEN_PREFIX = "st/seen/"
      DAY = 86_400
      NO_ROOT = [nil, false].freeze # (a directory under no root: Key#resolve's answer)

      # The roots as given.
      attr_reader :roots

      # +roots+: absolute directories, the first being the application root.
      def initialize(roots)
        @roots = Array(roots).map { |r| r.to_s.dup.freeze }.freeze
        @tags = {}
        @stable = {}
        Array(roots).each_with_index do |root, i|
          root = root.to_s
          root = root.chomp("/") unless root == "/"
          next if root.empty? || @tags.key?(root)

          tag = i.zero? ? "~" : File.basename(root)
          tag = "root" if tag.empty? || tag == "/"
          tag = "#{tag}##{i}" if @tags.value?(tag)
          @tags[root] = tag.tr("/", "_").freeze
          @stable[root] = !i.zero?
        end
        @dirs = {}
        @last_dir = nil
        @last_info = nil
        @variants = {}
        @roots_by_tag = nil # (made on first use by #source_path)
        @root_here = nil
        @binary = Encoding::BINARY # (hot path: see ARCHITECTURE.md)
        @native = BACKEND == :native ? Native : nil
        @spare = [] # (#lookup_key's Strings, given back by #release: one, unless threads race)
        # Native.cc_key's roots: [bytes ("" for "/"), tag], the longest first (the deepest wins).
        @native_roots = @tags.map { |root, tag| [(root == "/" ? "" : root).b.freeze, tag.b.freeze].freeze }
                             .sort_by { |root, _| -root.bytesize }.freeze
      end

      # { root => tag }: how keys name each root (LoadedFiles records it, so a record made with
      # the app at one path can be read with it at another).
      def root_tags #: () -> Hash[String, String]
        @tags.dup.freeze
      end

      # The variant digest (16 hex digits) for a handler kind and its option string.
      def variant(kind, options) #: (Symbol, String) -> String
        @variants[[kind, options]] ||= begin
          parts = ["loadout-compile-cache", FORMAT_VERSION, RUBY_ENGINE, RUBY_VERSION, RUBY_REVISION,
                   RUBY_PLATFORM, defined?(RUBY_ENGINE_VERSION) ? RUBY_ENGINE_VERSION : "", kind, options]
          format("%016x", XXH64.digest(parts.join("\0"))).freeze
        end
      end

      # The store key (a binary String) for +path+ (absolute) under +variant+.
      #: (String, String, String) -> String
      def for(kind_letter, variant, path)
        # One native call: Native.cc_key builds what the Ruby below does, comparing an ASCII path
        # with each root (no object for its directory), or says no.
        native = @native and key = native.cc_key(kind_letter, variant, path, @native_roots, nil) and return key

        slash = path.rindex("/")
        prefix = slash && dir_info(path, slash)[0]
        # "cc/" is PREFIX, spelled out. The store's keys are bytes: a fresh String, safe to retag.
        return "cc/#{kind_letter}/#{variant}/#{path}".force_encoding(@binary) unless prefix
        unless path.ascii_only? # (path[slash, n] rather than path[slash..] saves a Range)
          return "cc/#{kind_letter}/#{variant}/#{prefix}#{path[slash, path.length - slash]}".force_encoding(@binary)
        end

        # One new String per file (a warm boot makes one per file it loads): the path is appended
        # whole and its directory cut out again (+slash+ counts bytes in an ASCII path).
        key = "cc/#{kind_letter}/#{variant}/#{prefix}"
        at = key.bytesize
        (key << path).force_encoding(@binary)
        key[at, slash] = ""
        key
      end

      # #for's key, for a lookup whose caller keeps nothing of it and gives it back with #release
      # when done: natively written into a String given back earlier (no object per lookup; a
      # warm boot looks up one per file it loads). Not for a key that is stored or kept.
      #: (String, String, String) -> String
      def lookup_key(kind_letter, variant, path)
        native = @native and key = native.cc_key(kind_letter, variant, path, @native_roots, @spare) and return key

        self.for(kind_letter, variant, path)
      end

      # Takes back a key from #lookup_key that its caller no longer uses (one is kept: a lookup
      # that finds none makes a new one).
      def release(key) #: (String) -> void
        @spare << key if @spare.empty?
      end

      # The "seen" records of the variants this process used: { key => "<day>\n<root>\n..." }.
      #: (?Time) -> Hash[String, String]
      def seen_records(now = Time.now)
        return {} if @roots.any? { |r| r.include?("\n") }

        value = ([now.to_i / DAY] + @roots).join("\n").b
        @variants.each_value.to_h { |variant| ["#{SEEN_PREFIX}#{variant}", value] }
      end

      # [day, roots] from a "seen" record's value, or nil.
      def self.parse_seen(raw) #: (String?) -> [Integer, Array[String]]?
        day, *roots = raw&.dup&.force_encoding(Encoding::UTF_8)&.split("\n")
        day&.match?(/\A\d+\z/) ? [Integer(day), roots] : nil
      end

      # The absolute source path a store key (an entry's, or its stat record's) stands for under
      # these roots; nil when the key names a root tag these roots do not have, or (+existing_root+)
      # a root that is not a directory here: another machine's or container's Ruby, whose files
      # this process cannot see, and so cannot say are gone.
      #: (String, ?existing_root: bool) -> String?
      def source_path(store_key, existing_root: false)
        parts = store_key.split("/", store_key.start_with?(STAT_PREFIX) ? 5 : 4)
        rest = parts.last
        return nil if parts.size < 4 || rest.nil? || rest.empty?
        return rest.dup.force_encoding(Encoding::UTF_8) if rest.start_with?("/")

        tag, rel = rest.split("/", 2)
        root = (@roots_by_tag ||= @tags.invert)[tag] or return nil
        return nil if existing_root && !(@root_here ||= Hash.new { |h, r| h[r] = File.directory?(r) })[root]

        path = rel.nil? ? root : "#{root == "/" ? "" : root}/#{rel}"
        path.force_encoding(Encoding::UTF_8)
      end

      # True when +path+ is under a root other than the application's (a gem dir, the Ruby prefix).
      def stable?(path) #: (String) -> bool
        slash = path.rindex("/")
        slash ? dir_info(path, slash)[1] : false
      end

      # The key of the small stat record that belongs to the entry at +key+: STAT_PREFIX in place
      # of PREFIX ("s/" after its 3 bytes, literals: hot path, see ARCHITECTURE.md). One new
      # String, binary (the store would copy a key that is not); a boot after a checkout builds
      # one per file.
      def self.stat_key(key) #: (String) -> String
        stat = key.b
        stat[3, 0] = "s/"
        stat
      end

      private

      # A boot requires files directory by directory, so the last directory is remembered: the
      # next file in it is recognised without cutting its directory out as a new String.
      def dir_info(path, slash)
        last = @last_dir
        if last && slash == last.length && slash.positive? && path.encoding == last.encoding && path.start_with?(last)
          return @last_info
        end

        # (Frozen: a Hash keeps a frozen String key as it is, and copies any other.)
        dir = slash.zero? ? "/" : path[0, slash].freeze
        @last_dir = dir
        @last_info = (@dirs[dir] ||= resolve(dir))
      end

      # [tag + relative dir, stable?] for a directory: the deepest root containing it, found by
      # comparing the directory with each root in place (a boot resolves each directory it loads
      # from once: three new objects each, the directory's String in @dirs, the prefix and this
      # pair).
      def resolve(dir)
        best = nil
        @tags.each_key do |root|
          best = root if (best.nil? || root.bytesize > best.bytesize) && under?(dir, root)
        end
        return NO_ROOT unless best

        tag = @tags[best]
        start = best == "/" ? 1 : best.bytesize + 1 # the relative dir's first byte
        return [tag, @stable[best]].freeze if start >= dir.bytesize

        prefix = "#{tag}/"
        if dir.ascii_only? # (the directory appended whole and its root cut out again: no slice)
          at = prefix.length
          (prefix << dir)[at, start] = ""
        else
          prefix << dir.byteslice(start, dir.bytesize - start)
        end
        [prefix, @stable[best]].freeze
      end

      # True when +root+ is +dir+ or one of its ancestors: the same bytes up to a "/". A root and
      # a directory whose encodings cannot be compared (both non-ASCII) never match, as when the
      # two are looked up in one Hash.
      def under?(dir, root)
        return dir.start_with?("/") if root == "/"

        dir.start_with?(root) && (dir.bytesize == root.bytesize || dir.getbyte(root.bytesize) == 47) # "/"
      rescue Encoding::CompatibilityError
        false
      end
    end
  end
end

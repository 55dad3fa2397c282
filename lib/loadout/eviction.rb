# frozen_string_literal: true

module Loadout
  # Which store entries can never be served again, so compaction drops them instead of copying
  # them forever (Store#compact(evict:), and the automatic sweep Store#evictor= arms). A dropped
  # entry costs at most one miss, never a wrong answer: the rule only ever removes cache.
  #
  # - A compile cache entry (and its stat record) whose source file no longer exists: a hit
  #   needs the file (a gem version `bundle update` replaced, a deleted app file). The key names
  #   its source relative to a root; the roots are those the boots using that variant recorded
  #   ("st/seen/<variant>") and this process's own, and an entry goes only when the file is
  #   missing under every root that knows its tag and is a directory here. Only this process's
  #   own environment is judged so: a variant whose boots recorded other roots (another
  #   container's Ruby sharing the cache) keeps its entries until it ages out.
  # - Every entry of a variant no boot has used for UNUSED_DAYS (an old Ruby, other compile
  #   options), and that variant's record. Boots record the variants they use at exit, at most
  #   once a day each (CompileCache::Key#seen_records): a warm boot reads a record or two, writes
  #   nothing more than once a day, never loads this file, and does none of it while files load.
  # - A load path listing ("lp/ent/<dir>") of a directory that existed when it was listed and no
  #   longer does (a gem version replaced by `bundle update`), and its relocatable copy
  #   ("lp/gem/...", "lp/app/...") once no gem home or app root here holds that directory; and the
  #   whole-$LOAD_PATH indexes earlier versions stored ("lp/idx/...", "lp/recent"), which nothing
  #   reads any more.
  # Everything else (boot records) is kept.
  class Eviction
    UNUSED_DAYS = 30

    # +roots+: this process's compile cache roots (the app root first).
    def initialize(roots:, now: Time.now)
      require_relative "compile_cache/key"
      @own = CompileCache::Key.new(roots)
      @today = now.to_i / CompileCache::Key::DAY
      @seen = {} # variant => [day or nil, Key or nil]
      @count = 0
      @bytes = 0
    end

    # How many entries (and record bytes) this evictor dropped.
    attr_reader :count, :bytes

    # True when +key+ is dropped; +read+ returns another key's value (or nil), +len+ is the
    # record's size (for the count).
    #: (String, ^(String) -> String?, ?Integer) -> bool
    def call(key, read, len = 0)
      dead = dead?(key, read)
      if dead
        @count += 1
        @bytes += len
      end
      dead
    rescue StandardError
      false # any doubt keeps the entry
    end

    private

    def dead?(key, read)
      if key.start_with?("cc/")
        compile_entry_dead?(key, read)
      elsif key.start_with?(CompileCache::Key::SEEN_PREFIX)
        day, = seen(key.delete_prefix(CompileCache::Key::SEEN_PREFIX), read)
        !day.nil? && aged?(day)
      elsif key.start_with?("lp/ent/")
        listing_dead?(key, read)
      elsif key.start_with?("lp/gem/", "lp/app/")
        moved_listing_dead?(key, read)
      elsif key.start_with?("lp/idx/", "lp/recent")
        true # the whole-$LOAD_PATH indexes of earlier versions: listings are per directory now
      else
        false
      end
    end

    # A listing of a directory that is gone (a gem version replaced by `bundle update`). One that
    # recorded a directory missing when it was listed (site dirs often are) is kept: it is a few
    # bytes, and evicting it would have every boot list the directory again.
    def listing_dead?(key, read)
      return false if File.directory?(key.delete_prefix("lp/ent/").force_encoding(Encoding::UTF_8))

      decoded = LoadPath::Codec.decode(read.call(key), nil)
      decoded.nil? || !decoded.dirs.empty?
    end

    # The relocatable copy of a listing (LoadPath::Lister): gone when the dir it names is under
    # none of this process's gem homes ("lp/gem/gems/rack-3.0.8/lib") or not under its app root
    # ("lp/app/lib") any more, listed when it existed.
    def moved_listing_dead?(key, read)
      kind, rel = key.byteslice(3, key.bytesize).force_encoding(Encoding::UTF_8).split("/", 2)
      return false if rel.nil? || rel.empty?

      dirs = if kind == "app"
               [File.join(@own.roots.first, rel)]
             else
               sub, rest = rel.split("/", 2)
               @own.roots.drop(1).map { |home| File.join(home, sub.tr("-", "/"), rest.to_s) }
             end
      return false if dirs.empty? || dirs.any? { |d| File.directory?(d) }

      decoded = LoadPath::Codec.decode(read.call(key), nil)
      decoded.nil? || !decoded.dirs.empty?
    end

    def compile_entry_dead?(key, read)
      variant = key.split("/", key.start_with?("cc/s/") ? 5 : 4)[-2]
      day, recorded = seen(variant, read)
      return true if day && aged?(day)
      # Recorded by boots with other roots: another container's or machine's Ruby sharing the
      # cache (3.1's and 3.3's images), whose files this process may not see. They age out.
      return false if recorded && recorded.roots.sort != @own.roots.sort

      # (Under a root that is a directory here only: a cache shared with another container's Ruby
      # holds entries for files this one cannot see; those go by age, not as "gone".)
      paths = [recorded, @own].compact.filter_map { |k| k.source_path(key, existing_root: true) }.uniq
      !paths.empty? && paths.none? { |p| File.exist?(p) }
    end

    def aged?(day)
      day < @today - UNUSED_DAYS
    end

    # [day, Key of the recorded roots] from "st/seen/<variant>", each nil when absent.
    def seen(variant, read)
      @seen[variant] ||= begin
        day, roots = CompileCache::Key.parse_seen(read.call("#{CompileCache::Key::SEEN_PREFIX}#{variant}"))
        [day, roots.nil? || roots.empty? ? nil : CompileCache::Key.new(roots)]
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  # Serves loadout's own files while loadout sets itself up. The compile cache's hook exists only
  # once its ~30 files are loaded, so without this Ruby would compile those files on every boot
  # (bench/results/comment-figures-2026-11-27.md has what that cost). Their compiled entries live in one small file
  # beside the store ("<store>.self-<variant>"), read whole at setup; a tiny load_iseq hook serves
  # them through the compile cache's own freshness rule (Native.cc_judge, see
  # CompileCache::Freshness: one stat, racy rule; when the stat does not vouch,
  # the file's digest) until setup is over, then steps aside.
  #
  # Relocatable, as a fleet needs it: entries are keyed by their path under loadout's lib dir, and
  # the file's name does not depend on where that dir is. A bundle restored at another path, a
  # Docker COPY or a chown (new inodes, ctimes) is served after one digest of each file; at
  # another path the binaries' paths are rewritten in C (Native.ibf_relocate: no Ruby of
  # loadout's is needed for it, so nothing is compiled).
  #
  # The file is written at exit (CompileCache.__at_finish, then .write) when it is missing or one of
  # loadout's files was not served from it by its stat (a new loadout, an edited file, a moved or
  # restored lib dir), for the files it was asked for: entries that served by their stat are
  # written again as they are, files served by digest from what was served, with their new stat,
  # and a file it had no entry for from Ruby's own compile of it (OwnCompiles): nothing is
  # compiled twice. This file itself is the one Ruby always compiles, so it stays
  # small. Any failure: Ruby compiles, nothing else.
  module SelfCache # :nodoc:
    MAGIC = "LOself5\n"
    # An entry's flag in the file (and bit 31 of its place in the table, see .parse): made from
    # what Ruby compiled on a cold boot (OwnCompiles), without knowing what -w would print.
    CAPTURED = 1
    LIB = File.expand_path("..", __dir__)
    LIB_PREFIX = "#{LIB}/"
    # CompileCache::Entry's layout, read here before any of loadout's other Ruby is loaded: the
    # head's size (it ends an entry), where its flags byte and its payload, path and realpath
    # lengths are; and a stat record's fields.
    HEAD = 72
    FLAGS_AT = 5
    PINNED_PATH = 16 # Entry::PINNED_PATH
    LENGTHS_AT = 64
    STAT_LAYOUT = "a4Cx3q<q<q<q<Q<Q<Q<" # Entry::STAT_LAYOUT

    # Passes load_iseq on unless the self cache has the file.
    module Hook
      def load_iseq(path)
        SelfCache.fetch(path) || (defined?(super) ? super : nil)
      end
    end

    @table = nil
    @data = nil # the self cache file's bytes while setup runs (the table says where each entry is)
    @served = 0
    @revalidated = 0
    @hooked = false
    @capture = nil # (the OwnCompiles of a boot with files it has no entry for)
    @opening = false
    @writes = false

    class << self
      # How many of loadout's files this process got from the self cache, and how many of those
      # were revalidated by digest (a moved, restored or chowned lib dir; a new stat).
      attr_reader :served, :revalidated

      # Runs the block (loadout's setup for +config+) with loadout's files served from the
      # self cache; afterwards asks the compile cache's writer to refresh the file if needed.
      def around(config)
        start(config)
        yield
      ensure
        stop(config)
      end

      # The one-call check of a cache hit, for one of loadout's own files: fresh by its stat, or
      # revalidated by its digest and pointed at where the file is now.
      def fetch(path) #: (String) -> RubyVM::InstructionSequence?
        table = @table or return nil
        return nil unless path.start_with?(LIB_PREFIX)

        unless (at = table[path.byteslice(LIB_PREFIX.bytesize, path.bytesize - LIB_PREFIX.bytesize)])
          return nil if @opening # (own_compiles.rb itself, loaded by #own_compiles: never written)

          @stale = true
          @asked << path
          (@capture ||= own_compiles)&.expect(path) # (Ruby compiles it next: kept, not compiled again)
          return nil
        end
        blob = entry_at(at) # the judge cuts its argument down to the payload
        # (The entry's own version is accepted: the file's name carries loadout's version.)
        # Freshness's verdicts, as literals (the low four bits): 5 FRESH, 6 FRESH_BY_RECORD and
        # 7 REVALIDATED serve; bit 16 MOVED (made at another path: blob is left whole, the binary
        # is relocated), else blob is now the binary; 3 NEGATIVE and 4 WARNS: Ruby compiles this
        # one, not a reason to rewrite the file, unless it WARNS because it was captured (bit 31
        # of +at+: not known under -w; this boot's -w is the chance to know). An empty record: no
        # stat record, the digest decides.
        record = String.new(capacity: 64)
        # The version byte (the head's byte 4) of the head that ends the entry (literals: HEAD is
        # 72; each constant named here would cost a cache object per file on Ruby 3.1)
        version = blob.bytesize >= 72 ? blob.getbyte(blob.bytesize - 68) : -1
        verdict = Native.cc_judge(blob, path, version, Native::CC_RACY_NS, $VERBOSE == true, true, record)
        kind = verdict & 15
        iseq = if kind == 5 && verdict & 16 == 0
                 RubyVM::InstructionSequence.load_from_binary(blob).tap { blob.clear } # (freed now: the next file's
                 # entry reuses its memory instead of touching new pages)
               elsif kind >= 5 && kind <= 7
                 served_by_digest(path, at, verdict & 16 == 0 ? blob : nil, verdict & 32 == 0 ? nil : record)
               end
        if iseq
          @served += 1
          @kept << at if kind == 5 && verdict & 16 == 0 # (an entry to write again as it is)
        elsif verdict != 3 && (verdict != 4 || at & 0x8000_0000 != 0)
          @stale = true
          @asked << path
        else
          @kept << at
        end
        iseq
      rescue StandardError
        @stale = true
        @asked << path
        nil
      end

      # Writes the self cache file +name+ in +dir+ (the cache dir, held open: Trust::DirHandle) for
      # loadout's +files+ compiled with +options+ (atomically: a reader sees the old file or the
      # new one; a failed write leaves no temp file; created exclusively, with the cache's modes).
      # +known+: entries already made for some of them (kept as they were, served by digest, or
      # made from Ruby's own compile: OwnCompiles), used instead of compiling. Entries are
      # ISeqBuild's, negative ones included, so a file Ruby must compile is known as such, not as
      # missing. Unreadable files are left out.
      # +captured+: the files of +known+ whose entries are CAPTURED (made from a compile without
      # knowing what -w prints: OwnCompiles).
      #: (Trust::DirHandle, String, Array[String], Hash[Symbol, untyped], ?Hash[String, String], ?captured: Array[String]) -> void
      def write(dir, name, files, options, known = {}, captured: [])
        # compile_file reads in the default external encoding: one that is not ASCII-compatible
        # (an app may set it) cannot read source; a later boot writes the self cache.
        return unless Encoding.default_external.ascii_compatible?

        entries = files.filter_map do |file|
          next unless file.start_with?(LIB_PREFIX)

          entry = known[file]
          flags = entry && captured.include?(file) ? CAPTURED : 0
          entry ||= CompileCache::ISeqBuild.entry(file, options)
          entry && [file.byteslice(LIB_PREFIX.bytesize, file.bytesize - LIB_PREFIX.bytesize), entry, flags]
        end
        dir.write_atomically(name, dump(entries))
      rescue SystemCallError, IOError
        nil # the next boot compiles loadout's files itself and asks again
      end

      # The bytes of a self cache file for +entries+ ([[path under the lib dir, entry, flags], ...];
      # flags: CAPTURED or 0).
      def dump(entries) #: (Array[[String, String, Integer]]) -> String
        body = entries.map { |rel, e, flags| [rel.bytesize, e.bytesize, flags].pack("L<L<C") + rel.b + e.b }.join.b
        MAGIC.b + [Native.store_crc32c(body, 0), entries.size].pack("L<L<") + body
      end

      # { path under the lib dir => where its entry is in +data+ (offset << 32 | length, with bit
      # 31 set for a CAPTURED entry) } from the bytes of a self cache file; nil when they are not
      # intact. Positions, not copies: each entry is cut out of the file's bytes once, when its
      # file is loaded (#entry_at).
      def parse(data) #: (String) -> Hash[String, Integer]?
        return nil unless data.start_with?(MAGIC) && data.bytesize >= 16

        crc, count = data.unpack("L<L<", offset: 8)
        body = data.byteslice(16, data.bytesize - 16)
        return nil unless Native.store_crc32c(body, 0) == crc

        table = {}
        at = 0
        count.times do
          path_len, len, flags = body.unpack("L<L<C", offset: at)
          return nil unless flags && len < 0x8000_0000 && at + 9 + path_len + len <= body.bytesize

          path = body.byteslice(at + 9, path_len).force_encoding(Encoding::UTF_8)
          table[path] = (16 + at + 9 + path_len) << 32 | (flags & CAPTURED) << 31 | len
          at += 9 + path_len + len
        end
        at == body.bytesize ? table : nil
      end

      # Where the self cache for +store_path+ lives: one file per Ruby, loadout version and set of
      # compile options, so different Rubies keep theirs side by side. Not per lib dir: a bundle
      # restored at another path uses the same file (see .fetch).
      def path_for(store_path) #: (String) -> String
        parts = [VERSION, RUBY_ENGINE, RUBY_VERSION, RUBY_REVISION, RUBY_PLATFORM,
                 RubyVM::InstructionSequence.compile_option.sort_by { |k, _| k.to_s }.inspect]
        format("%s.self-%016x", store_path, Native.xxh64(parts.join("\0"), 0))
      end

      private

      # The ISeq of an entry that was fresh by digest (or compiled at another path): its binary,
      # with the paths it was compiled at replaced by this file's, remembered for the rewrite at
      # exit. nil when it cannot be moved (a source that spells out its own path, or a path that
      # was its own realpath and now is reached through a link): Ruby compiles it.
      def served_by_digest(path, at, payload, record)
        entry = entry_at(at).freeze # whole (the judge may have cut the other copy down to its payload)
        binary = payload || relocate(entry, path)
        return nil unless binary

        iseq = RubyVM::InstructionSequence.load_from_binary(binary)
        @revalidated += 1
        @stale = true
        @refreshed[path] = [entry, binary, record, at & 0x8000_0000 != 0] # (CAPTURED: see .parse)
        iseq
      end

      # A new String with the entry at +at+ (see #parse) in the file read at start.
      def entry_at(at)
        @data.byteslice(at >> 32, at & 0x7fff_ffff)
      end

      def relocate(blob, path)
        head = blob.bytesize - HEAD
        payload_len, path_len, real_len = blob.unpack("L<S<S<", offset: head + LENGTHS_AT)
        payload = blob.byteslice(0, payload_len)
        old_path = blob.byteslice(payload_len, path_len)
        old_real = blob.byteslice(payload_len + path_len, real_len)
        real = File.realpath(path)
        return payload if old_path == path && old_real == real
        return nil if (blob.getbyte(head + FLAGS_AT) & PINNED_PATH) != 0
        return nil if old_path == old_real && path != real # one String object in the binary

        pairs = [[old_path, path]]
        pairs << [old_real, real] unless old_real == old_path
        binary = Native.ibf_relocate(payload, pairs)
        binary.equal?(payload) ? payload : binary
      rescue SystemCallError
        nil
      end

      # The entries to write for the files served by digest or at another path: their relocated
      # binary with the stat and digest the revalidation took (before it read the file), or the
      # entry's own when its stat vouched (a dir moved with its inodes), at their path now.
      def refreshed_entries(refreshed)
        entry = CompileCache::Entry
        refreshed.to_h do |path, (blob, binary, record, _)|
          if record
            _, _, size, mtime, ctime, verified, ino, dev, digest = record.unpack(STAT_LAYOUT)
          else
            own = entry.load(blob)
            size, mtime, ctime, verified, ino, dev, digest = own.size, own.mtime, own.ctime, own.verified, own.ino,
                                                             own.dev, own.digest
          end
          flags = entry.flags_of(blob)
          [path, entry.dump(flags, [size, mtime, ctime, ino, dev], verified, digest, binary,
                            path: path, realpath: File.realpath(path))]
        end
      rescue StandardError
        {}
      end

      def start(config)
        @table = @data = nil
        return unless BACKEND == :native && config.compile_cache.include?(:iseq)
        return if defined?(::Coverage) && ::Coverage.respond_to?(:running?) && ::Coverage.running?

        @name = File.basename(path_for(config.store_path))
        # Nothing is read from a cache dir that fails the trust rule (Loadout::Trust). The cache
        # dir is checked and held open here, and the verdict (with the open directory) goes to
        # Trust, which warns, so the walk is not repeated and the store opens in the same
        # directory this file is read from.
        key = [config.cache_dir, config.root, config.trust_shared_cache]
        report, dir = Trust.check_dir(*key)
        # The whole cache or nothing: a quick look at the store and its hint too (the store checks
        # them again as opened), so a cache that will be refused serves no file of loadout's either.
        store = File.basename(config.store_path)
        if dir && (report = file_problem(dir, store) || file_problem(dir, "#{store}.hint"))
          dir.close
          dir = nil
        end
        Trust.remember_walk(key, [report, dir]) # the setup that follows uses this verdict
        return if report && report[0] != :missing # (missing: setup makes it; this boot writes the file)

        begin
          data = dir&.read(@name) # nil: no file yet
        rescue Trust::Refused => e # it fails the rule: the cache is refused
          return Trust.remember_walk(key, [e.report, nil])
        rescue SystemCallError
          data = nil # unreadable: Ruby compiles
        end
        @table = (data && parse(data)) || {}
        @data = data
        @stale = @table.empty?
        @refreshed = {}
        @kept = [] # the places (see .parse) of entries that served or stand as they are
        @asked = [] # files it was asked for and has no entry to keep for
        @capture = nil # (made at the first file it has no entry for: #own_compiles)
        @writes = !config.readonly
        @loaded_before = $LOADED_FEATURES.size
        return if @hooked

        RubyVM::InstructionSequence.singleton_class.prepend(Hook)
        @hooked = true
      rescue StandardError, ScriptError
        @table = nil
      end

      # { path => [entry, CAPTURED?] } for the entries that served by their stat or stand as they
      # are (negative ones): written again as they are.
      def kept_entries(table)
        return {} if @kept.empty?

        paths = table.invert
        @kept.to_h { |at| ["#{LIB_PREFIX}#{paths[at]}", [entry_at(at), at & 0x8000_0000 != 0]] }
      end

      # An OwnCompiles keeping what Ruby compiles of loadout's files from now on, or nil (a boot
      # that writes no self cache).
      def own_compiles
        return nil unless @writes

        @opening = true
        require_relative "self_cache/own_compiles"
        OwnCompiles.new
      rescue StandardError, ScriptError
        nil
      ensure
        @opening = false
      end

      # A report when +name+ is there and fails the rule (one it cannot look at is the store's to
      # report), else nil.
      def file_problem(dir, name)
        report = dir.lstat_problem(name)
        report unless report && report[0] == :error
      end

      def stop(config)
        return unless (table = @table)

        kept = @stale && !config.readonly ? kept_entries(table) : {}
        @table = @data = nil
        capture = @capture
        @capture = nil
        capture&.stop
        return unless @stale && !config.readonly

        # Only a compile cache that did load and install (never an autoload that failed to load).
        return unless Loadout.autoload?(:CompileCache).nil? && defined?(CompileCache) && CompileCache.installed?

        entries = CompileCache.entries
        # A store opened read-only (readonly: true, or a cache dir it cannot write) writes nothing.
        return if entries.nil? || entries.readonly?

        # Written where the store is: the cache dir the boot checked, held open by the store.
        store = entries.store
        dir = store.respond_to?(:__dir) ? store.__dir : nil
        return unless dir

        # The files it was asked for (those the compile cache served never reach it) and loaded.
        asked = (@asked + kept.keys + @refreshed.keys).to_h { |f| [f, true] }
        files = $LOADED_FEATURES.drop(@loaded_before).select { |f| asked.key?(f) && f.end_with?(".rb") }
        return if files.empty?

        name = @name
        options = RubyVM::InstructionSequence.compile_option
        refreshed = @refreshed
        CompileCache.__at_finish do
          made = capture ? capture.entries : {}
          captured = made.keys + refreshed.filter_map { |path, (*, was_captured)| path if was_captured }
          captured += kept.filter_map { |path, (_, was_captured)| path if was_captured }
          known = kept.transform_values(&:first).merge(refreshed_entries(refreshed), made)
          write(dir, name, files, options, known, captured: captured)
        end
      rescue StandardError, ScriptError
        nil
      end
    end
  end
end

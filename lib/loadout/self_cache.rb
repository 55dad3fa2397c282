# frozen_string_literal: true

module Loadout
  # Serves loadout's own files while loadout sets itself up. The compile cache's hook exists only
  # once its ~30 files are loaded, so those files used to be compiled by Ruby on every boot (about
  # 35M instructions, 4% of a warm 470-file boot). Their compiled entries live in one small file
  # beside the store ("<store>.self-<variant>"), read whole at setup; a tiny load_iseq hook serves
  # them through the compile cache's own freshness rule (Native.cc_judge, see
  # CompileCache::Freshness: exact path, one stat, racy rule, payload digest; no stat record,
  # no revalidation) until setup is over, then steps aside.
  #
  # The file is written at exit (CompileCache.__at_finish, then .write) when it is missing or one of
  # loadout's files was not served from it (a new loadout, an edited file). This file itself is
  # the one Ruby always compiles, so it stays small. Any failure: Ruby compiles, nothing else.
  module SelfCache # :nodoc:
    MAGIC = "LOself1\n"
    LIB = File.expand_path("..", __dir__)
    LIB_PREFIX = "#{LIB}/"

    # Passes load_iseq on unless the self cache has the file.
    module Hook
      def load_iseq(path)
        SelfCache.fetch(path) || (defined?(super) ? super : nil)
      end
    end

    @table = nil
    @served = 0
    @hooked = false

    class << self
      # How many of loadout's files this process got from the self cache.
      attr_reader :served

      # Runs the block (loadout's setup for +config+) with loadout's files served from the
      # self cache; afterwards asks the compile cache's writer to refresh the file if needed.
      def around(config)
        start(config)
        yield
      ensure
        stop(config)
      end

      # The one-call check of a cache hit, for one of loadout's own files.
      def fetch(path) #: (String) -> RubyVM::InstructionSequence?
        table = @table or return nil
        unless (entry = table[path])
          @stale = true if path.start_with?(LIB_PREFIX)
          return nil
        end
        blob = entry.dup # the judge cuts its argument down to the payload; the table keeps the entry
        # (The entry's own version is accepted: the file's name carries loadout's version.)
        # Freshness's verdicts, as literals: 5 FRESH (blob is now the binary), 3 NEGATIVE and
        # 4 WARNS (Ruby compiles this one: not a reason to rewrite the file).
        verdict = Native.cc_judge(blob, path, blob.getbyte(4), Native::CC_RACY_NS, $VERBOSE == true, false, nil)
        iseq = verdict == 5 ? RubyVM::InstructionSequence.load_from_binary(blob) : nil
        if iseq
          @served += 1
        elsif verdict != 3 && verdict != 4
          @stale = true
        end
        iseq
      rescue StandardError
        @stale = true
        nil
      end

      # Writes the self cache file +name+ in +dir+ (the cache dir, held open: Trust::DirHandle) for
      # loadout's +files+ compiled with +options+: ISeqBuild's entries, negative ones included, so a
      # file Ruby must compile is known as such, not as missing. Atomically: a reader sees the old
      # file or the new one; a failed write leaves no temp file; created exclusively, with the
      # cache's modes. Unreadable files are left out.
      #: (Trust::DirHandle, String, Array[String], Hash[Symbol, untyped]) -> void
      def write(dir, name, files, options)
        # compile_file reads in the default external encoding: one that is not ASCII-compatible
        # (an app may set it) cannot read source; a later boot writes the self cache.
        return unless Encoding.default_external.ascii_compatible?

        entries = files.filter_map { |file| (entry = CompileCache::ISeqBuild.entry(file, options)) && [file, entry] }
        dir.write_atomically(name, dump(entries))
      rescue SystemCallError, IOError
        nil # the next boot compiles loadout's files itself and asks again
      end

      def dump(entries) #: (Array[[String, String]]) -> String
        body = entries.map { |path, e| [path.bytesize, e.bytesize].pack("L<L<") + path.b + e.b }.join.b
        MAGIC.b + [Native.store_crc32c(body, 0), entries.size].pack("L<L<") + body
      end

      # { path => entry } from the bytes of a self cache file; nil when they are not intact.
      def parse(data) #: (String) -> Hash[String, String]?
        return nil unless data.start_with?(MAGIC) && data.bytesize >= 16

        crc, count = data.unpack("L<L<", offset: 8)
        body = data.byteslice(16, data.bytesize - 16)
        return nil unless Native.store_crc32c(body, 0) == crc

        table = {}
        at = 0
        count.times do
          path_len, len = body.unpack("L<L<", offset: at)
          return nil unless len && at + 8 + path_len + len <= body.bytesize

          path = body.byteslice(at + 8, path_len).force_encoding(Encoding::UTF_8)
          table[path] = body.byteslice(at + 8 + path_len, len).freeze
          at += 8 + path_len + len
        end
        at == body.bytesize ? table : nil
      end

      # Where the self cache for +store_path+ lives: one file per Ruby, loadout version and set of
      # compile options, so different Rubies keep theirs side by side.
      def path_for(store_path) #: (String) -> String
        parts = [VERSION, RUBY_ENGINE, RUBY_VERSION, RUBY_REVISION, RUBY_PLATFORM, LIB,
                 RubyVM::InstructionSequence.compile_option.sort_by { |k, _| k.to_s }.inspect]
        format("%s.self-%016x", store_path, Native.xxh64(parts.join("\0"), 0))
      end

      private

      # Entries that say "Ruby compiles this one" (here, or under -w): not a reason to rewrite.
      def start(config)
        @table = nil
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
        @stale = @table.empty?
        @loaded_before = $LOADED_FEATURES.size
        return if @hooked

        RubyVM::InstructionSequence.singleton_class.prepend(Hook)
        @hooked = true
      rescue StandardError, ScriptError
        @table = nil
      end

      # A report when +name+ is there and fails the rule (one it cannot look at is the store's to
      # report), else nil.
      def file_problem(dir, name)
        report = dir.lstat_problem(name)
        report unless report && report[0] == :error
      end

      def stop(config)
        return unless @table

        @table = nil
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

        files = $LOADED_FEATURES.drop(@loaded_before).select { |f| f.start_with?(LIB_PREFIX) && f.end_with?(".rb") }
        return if files.empty?

        name = @name
        options = RubyVM::InstructionSequence.compile_option
        CompileCache.__at_finish { write(dir, name, files, options) }
      rescue StandardError, ScriptError
        nil
      end
    end
  end
end

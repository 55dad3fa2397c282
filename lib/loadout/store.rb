# frozen_string_literal: true

require_relative "error"
require_relative "instrumentation"

module Loadout
  # Defined before its parts reopen it: a part's `class Store` would otherwise trigger the
  # Store autoload while this file is being required (Ruby warns about the circular require).
  class Store
    # (Words for what went wrong: a boot where nothing does loads none of it.)
    autoload :Problems, File.expand_path("store/problems", __dir__)
  end
end

require_relative "trust"
require_relative "store/format"
require_relative "store/log_file"
require_relative "store/key_map"
require_relative "store/hint"
require_relative "store/registry"
require_relative "store/failure_policy"
require_relative "store/opener"
require_relative "store/compaction"

module Loadout
  # A crash-safe, append-only key/value log shared by many processes (Bitcask-style): every cache
  # lives in one. Keys and values are binary Strings.
  #
  #   store = Loadout::Store.open("tmp/cache/loadout.store", fail_safe: true)
  #   store.put("k", "v"); store.get("k") # => "v"
  #
  # - Records are CRC-framed (see Store::Format); a get re-checks the CRC and key every time, so a
  #   damaged record is a miss, never wrong bytes.
  # - Appends from any number of processes take flock only around "check the file is still the
  #   one at the name, read what others appended, cut a torn tail, one write(2)"; readers never
  #   lock.
  # - Open reads the hint file (PATH.hint) when it names this very log (Store::Hint), and scans
  #   only what was appended after it. A torn tail is cut, and a compaction decides what is
  #   live, from the log alone (parsed from its first byte), never on the word of a hint.
  # - The directory is opened once (Trust::DirHandle) and every file in it is opened, created,
  #   renamed and removed through it, never by path again.
  # - fail_safe: true never raises for environment problems: one warning, then read-only or empty.
  # - defer_writes: true queues puts/deletes in memory until #flush, #close or process exit.
  # - The store, hint and temp files follow the trust rule (Loadout::Trust): a store file that
  #   fails it (another owner, writable by others, a symlink, a FIFO...) is neither read nor
  #   written; trust_shared_cache: true accepts group-writable files.
  #
  # Parts with state of their own are objects beside it: the LogFile, the KeyMap, the Hint, the
  # Opener, the Compaction and the FailurePolicy (lib/loadout/store/).
  class Store
    DELETED = Object.new.freeze # a queued delete in the defer_writes queue
    private_constant :DELETED, :LogState, :FailurePolicy, :Opener, :Compaction, :Hint, :KeyMap, :LogFile

    # Opens (creating when writable) the store at +path+; with a block, yields it and closes it.
    # (+dir+, internal: the Trust::DirHandle of the store's directory, checked by the caller; the
    # store uses it instead of opening the directory, and leaves it open when it closes.)
    #: (String, ?readonly: bool, ?fail_safe: bool, ?defer_writes: bool, ?trust_shared_cache: bool)
    #:   ?{ (Store) -> untyped } -> Store
    def self.open(path, readonly: false, fail_safe: false, defer_writes: false, trust_shared_cache: false, dir: nil)
      { readonly: readonly, fail_safe: fail_safe, defer_writes: defer_writes,
        trust_shared_cache: trust_shared_cache }.each do |name, value|
        raise ConfigError.new(name, value, "true or false") unless value == true || value == false
      end
      raise ConfigError.new(:dir, dir, "a Loadout::Trust::DirHandle") unless dir.nil? || dir.is_a?(Trust::DirHandle)

      store = new(path, readonly: readonly, fail_safe: fail_safe, defer_writes: defer_writes,
                        shared: trust_shared_cache, dir: dir)
      return store unless block_given?

      begin
        yield store
      ensure
        store.close
      end
    end

    def initialize(path, readonly:, fail_safe:, defer_writes:, shared: false, dir: nil)
      @path = path.respond_to?(:to_path) ? path.to_path : String(path)
      @name = File.basename(@path).freeze # (frozen: C takes it as a path without a copy)
      @shared = shared
      @fail_safe = fail_safe
      @pending = defer_writes ? {} : nil # key => value or DELETED, written by #flush
      @pid = Process.pid # the process whose queue @pending is
      @reopen_needed = false # a forked child must open its own descriptor before it locks
      @mutex = Mutex.new
      @closed = false
      @grown_by_others = false # see #grown_by_others?
      # A cold boot puts, gets and claims once per file it loads (hot path: see ARCHITECTURE.md).
      @binary_encoding = Encoding::BINARY
      @string_class = String
      @format, @put_flag, @record_header, @max_log = Format, Format::PUT, Format::HEADER, Format::MAX_LOG
      @deleted, @process = DELETED, Process
      @policy = FailurePolicy.new(@path, fail_safe, shared)
      @owns_dir = dir.nil?
      @dir = dir || Opener.open_dir(@path, readonly, shared, @policy) # nil: no directory, an empty store
      @hint = Hint.new(@dir, @name)
      @opener = Opener.new(@dir, @name, shared, @policy, @hint)
      @compaction = Compaction.new(@dir, @name)
      # The log as this process sees it (#adopt sets them all): the open LogFile (nil: none), its
      # KeyMap, where what the map covers ends, where the record that ends there starts (-1:
      # none), the end this process last read the log whole to (#sweep_if_due), the end the
      # hint on disk covers (-1: none that matched), where the log needs no sweep (0: as its file
      # header says; Compaction#due), and what the file holds besides records of this version
      # (+newer+, +foreign+: once seen, they stay).
      @file = @map = nil
      @end = @last = @settled_end = @hint_end = @swept = 0
      @newer = @foreign = nil
      opened = @opener.open(readonly)
      adopt(opened)
      @refused = opened.refused || false # the file or its hint failed the trust rule
      @writable = !readonly && !@file.nil? && @file.writable? && !@foreign && !@newer
      Registry.add(self)
    end

    attr_reader :path

    # Whether group-writable store files are accepted (and new ones are made 0640).
    def trust_shared_cache?
      @shared
    end

    # True when the store file (or its hint) failed the trust rule: nothing was read from it and
    # nothing will be written.
    def refused?
      @refused
    end

    # True when puts reach the file (false when read-only, degraded or closed).
    def writable?
      @writable && !@closed
    end

    # The directory the store's files are opened through (the caller's, when it passed one).
    def __dir # :nodoc:
      @dir
    end

    # The value stored under +key+ (a new binary String), or nil. A read from code that runs while
    # this thread is inside the store (a file loaded during compaction, whose compile cache asks
    # the store) answers nil, a miss, instead of a recursive-lock error.
    #: (String) -> String?
    def get(key)
      return nil if @mutex.owned?

      key = binary(key)
      @mutex.synchronize do
        if @pending && !@pending.empty? && @pending.key?(key)
          value = @pending[key]
          return value.equal?(@deleted) ? nil : value.dup
        end
        packed = @map.lookup(key)
        packed && read_value(key, packed)
      end
    end

    # A key or value over the limits (Format::MAX_KEY, MAX_VALUE) raises ArgumentError; with
    # fail_safe the key is deleted instead, so a get never returns the value it replaced.
    #: (String, String) -> nil
    def put(key, value)
      key = binary(key)
      value = binary(value)
      return oversized(key, value) unless @format.within_limits?(key.bytesize, value.bytesize)
      return nil if @mutex.owned? # a write from code loaded inside the store's own work: dropped

      @mutex.synchronize do
        next unless writing?

        if @pending
          forget_parent_queue
          @pending[key] = value.frozen? ? value : value.dup.freeze
          next
        end
        buf = @format.frame_into(@string_class.new(capacity: @record_header + key.bytesize + value.bytesize,
                                                   encoding: @binary_encoding), @put_flag, key, value)
        guarded_write do
          with_write_lock do |file|
            write_records(file, buf, [@put_flag, key, 0, buf.bytesize])
            sweep_if_due(file)
          end
        end
      end
      nil
    end

    #: (String) -> nil
    def delete(key)
      key = binary(key)
      @mutex.synchronize do
        next unless writing?

        if @pending
          forget_parent_queue
          @pending[key] = DELETED if @pending.key?(key) || @map.key?(key)
          next
        end
        guarded_write do
          with_write_lock do |file|
            next unless @map.key?(key)

            buf = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::DELETE, key, "")
            write_records(file, buf, [Format::DELETE, key, 0, buf.bytesize])
            sweep_if_due(file)
          end
        end
      end
      nil
    end

    # Writes +key+ from what the block returns, deciding with every process's latest writes in
    # view: under the append lock, with the map caught up, the block gets the current value (nil
    # when none) and returns the bytes to append now, or nil to leave it. Parallel processes that
    # would all store the same thing (cold boots on one cache) do it once. Returns true when it
    # wrote. Not deferred, whatever defer_writes says.
    #: (String) { (String?) -> String? } -> bool
    def claim(key)
      key = binary(key)
      return false if @mutex.owned? # from code that runs inside the store's own work

      @mutex.synchronize do
        next false unless writing?

        written = guarded_write do
          with_write_lock do |file|
            packed = @map.lookup(key)
            current = @pending&.key?(key) ? @pending[key] : packed && read_value(key, packed)
            current = nil if current.equal?(@deleted)
            value = yield current
            next false unless value.is_a?(@string_class)
            next false unless @format.within_limits?(key.bytesize, value.bytesize)

            @pending&.delete(key)
            value = binary(value)
            buf = @format.frame_into(@string_class.new(capacity: @record_header + key.bytesize + value.bytesize,
                                                       encoding: @binary_encoding), @put_flag, key, value)
            write_records(file, buf, [@put_flag, key, 0, buf.bytesize])
            buf.clear # freed now: a cold boot claims every file it compiles
            true
          end
        end
        written == true
      end
    end

    #: (String) -> bool
    def key?(key)
      key = binary(key)
      @mutex.synchronize do
        if @pending&.key?(key)
          !@pending[key].equal?(DELETED)
        else
          @map.key?(key)
        end
      end
    end

    # Yields every live key and value (values read and checked one at a time).
    #: () { (String, String) -> void } -> void
    def each
      return enum_for(:each) unless block_given?

      keys = @mutex.synchronize { @map.keys | (@pending ? @pending.keys : []) }
      keys.each do |key|
        value = get(key)
        yield key, value if value
      end
      self
    end

    #: () -> Integer
    def size
      @mutex.synchronize do
        n = @map.size
        @pending&.each do |key, value|
          if value.equal?(DELETED)
            n -= 1 if @map.key?(key)
          elsif !@map.key?(key)
            n += 1
          end
        end
        n
      end
    end

    # Why this file is never written, as [kind, what, fix] (the words of the warning a writer
    # gets): :foreign, not a store at all (nothing is read from it either), or :newer, a newer
    # loadout's (what precedes its first newer record is read); nil otherwise.
    #: () -> [Symbol, String, String]?
    def problem
      @mutex.synchronize do
        if @newer then [:newer, *Problems.newer_version]
        elsif @foreign then [:foreign, *Problems.foreign]
        end
      end
    end

    #: () -> Hash[Symbol, Integer | bool]
    def stats
      @mutex.synchronize do
        file_size = begin
          @file && !@closed ? @file.size : 0
        rescue SystemCallError, IOError
          0
        end
        { live_records: @map.size, live_bytes: @map.live_bytes,
          garbage_records: @map.garbage_records, garbage_bytes: @map.garbage_bytes,
          corrupt_records: @map.corrupt_records, corrupt_bytes: @map.corrupt_bytes,
          file_size: file_size, pending_writes: @pending ? @pending.size : 0, writable: writable? }
      end
    end

    # True once this process has found records another process appended (read under the append
    # lock, before each of its own writes): a boot that began on an empty store learns that a
    # parallel boot is filling it.
    def grown_by_others? #: () -> bool
      @grown_by_others
    end

    # Rewrites the log with live records only, leaving out those +evict+ drops: a callable
    # (key, read, record bytes) -> true to drop, where read.(key) returns another key's value
    # (Loadout::Eviction is the caches' rule). Returns true when it compacted.
    #: (?evict: untyped) -> bool
    def compact(evict: nil)
      @mutex.synchronize do
        next false unless writing?

        write_pending
        done = guarded_write do
          with_write_lock { |file| compact_locked(file, evict) }
          true
        end
        done == true
      end
    end

    # Arms automatic sweeps: +evict+ (as for #compact) is applied by every automatic compaction,
    # which then also runs once the log has grown by half since it was last compacted.
    def evictor=(evict)
      @compaction.evictor = evict
    end

    # Writes the defer_writes queue now (no-op otherwise).
    #: () -> nil
    def flush
      @mutex.synchronize { write_pending if writing? }
      nil
    end

    # Flushes, refreshes the hint file when the log grew, and closes. Safe to call twice.
    #: () -> nil
    def close
      @mutex.synchronize { close_locked }
      nil
    end

    def __close_at_exit # :nodoc:
      return if @pid != Process.pid # a forked child that never wrote: the parent owns the queue

      close
    rescue StandardError => e
      unless @fail_safe
        warn "loadout: closing store #{Trust::Words.shown(@path)} at exit failed: #{e.class}: #{e.message}"
      end
    end

    def inspect
      "#<#{self.class} #{@path}#{" (read-only)" unless writable?}>"
    end

    private

    def read_value(key, packed)
      value = @file.read_value(key, packed)
      return value if value

      @map.drop_corrupt(key)
      Instrumentation.emit(:corrupt, @path, cache: :store, reason: :checksum) if Instrumentation.enabled?
      nil
    rescue StandardError => e
      @policy.survive(e) # raises unless fail_safe
      nil
    end

    # Every get comes through here (hot path: see ARCHITECTURE.md).
    def binary(str)
      return str if str.is_a?(@string_class) && @binary_encoding.equal?(str.encoding)
      raise TypeError, "keys and values must be Strings, got #{str.class}" unless str.is_a?(String)

      str.b
    end

    def close_locked
      return if @closed

      begin
        own = @pid == Process.pid
        write_pending if @writable && own
        # No hint for a file another process has since renamed a new log over: it would name a
        # log no longer at the name (Hint would refuse it, and a good hint would be lost).
        write_hint if @writable && own && @file && @end != @hint_end && !@refused && !@file.replaced?
      rescue StandardError => e
        raise unless @policy.survivable?(e)

        degrade(*Problems.describe(e, @path))
      ensure
        @closed = true
        @file&.close
        @dir.close if @owns_dir && @dir
        Registry.remove(self)
      end
    end

    def oversized(key, value)
      Format.check_lengths(key.bytesize, value.bytesize) unless @fail_safe
      Instrumentation.emit(:skipped, @path, cache: :store, reason: :too_large) if Instrumentation.enabled?
      delete(key) if key.bytesize <= Format::MAX_KEY
      nil
    end

    def write_hint
      @hint_end = @end if @hint.write(@file, @map, @end, @last, @swept)
    end

    def writing?
      return true if @writable && !@closed

      @policy.not_writable(@closed, @foreign)
    end

    # The append protocol, shared by every writer process: takes flock(LOCK_EX) on the file,
    # makes sure it is still the file of that name (compaction may have renamed a new one over
    # it), reads what other processes appended since our last look (cutting a torn tail), and
    # yields the locked LogFile with the map caught up to its end. Readers never take the lock.
    def with_write_lock
      check_fork
      file = @file
      loop do
        file.lock
        break unless file.replaced?

        file.unlock
        reopen
        file = @file
      end
      begin
        size = file.size
        reload if size < @end # cut under us (only a torn tail is ever cut, so this is external)
        catch_up(size) if size > @end
        raise StoreError.new(@path, *(@newer ? Problems.newer_version : Problems.foreign)) if @newer || @foreign

        yield file
      ensure
        file.unlock
      end
    end

    # Appends framed records (+buf+; +entries+ = [flags, key, offset in buf, length, ...]).
    # The file header record (with a new log id) goes in front of the first write to an empty file.
    def write_records(file, buf, entries)
      at = @end
      shift = 0
      if at.zero?
        header = [Format::FILE_HEADER_SIZE + buf.bytesize, Random.urandom(Format::LOG_ID_SIZE)]
        head = Format.file_header(*header)
        shift = head.bytesize
        buf = head << buf
      end
      raise StoreError.new(@path, *Problems.full) if at + buf.bytesize > @max_log

      file.append(buf, at)
      file.header = header if header
      i = 0
      off = at
      while i < entries.length
        off = at + shift + entries[i + 2]
        @map.apply(entries[i], entries[i + 1], off, entries[i + 3])
        i += 4
      end
      @last = off
      @end = at + buf.bytesize
    end

    # Reads what other processes appended, up to +size+, into the map (under the append lock).
    def catch_up(size)
      @grown_by_others = true
      good, newer, foreign, read_end, last = @opener.catch_up(@file, @map, @end, size)
      @end = good
      @last = last if last
      @newer ||= newer
      @foreign = true if foreign
      cut_torn_tail if good < read_end && !@newer && !@foreign
    end

    # Bytes after the last valid record: a writer killed in the middle of its write(2) (no valid
    # record follows them). The next append must not be glued to them, so they are cut, under the
    # append lock. Where they start is decided by the log alone: it is read again from its first
    # byte (the map that said where to start reading may have come from the hint), only what
    # follows its last valid record goes, and the map is the one that read built.
    def cut_torn_tail
      state = @opener.scan(@file)
      @file.truncate(state.end) if !state.newer && !state.foreign && state.end < @file.size
      adopt(state)
    end

    # Compacts the locked +file+ (Compaction#run), adopts the new file and writes its hint.
    # +judged_below+: only records before this offset are offered to +evict+ (nil: all).
    def compact_locked(file, evict, judged_below = nil)
      adopt(@compaction.run(file, @end, evict, judged_below))
      write_hint
    end

    # The automatic compaction, when due. Records appended since this process last read the
    # log whole (#adopt) were written by boots running now, from files they just compiled or
    # parsed: live by construction, so the evictor judges only the older ones. A process that
    # found the log empty (a cold boot) has none to judge: it marks the log swept up to its end
    # instead of copying it (Compaction#due).
    def sweep_if_due(file)
      case @compaction.due(file, @map, @end, @swept, @settled_end)
      when :compact then compact_locked(file, @compaction.evictor, @settled_end)
      when :mark then @swept = @end
      end
    end

    # Runs a write; I/O errors raise StoreError, or with fail_safe (any error but a ConfigError)
    # turn the store read-only.
    def guarded_write
      yield
    rescue Trust::Refused => e # a hint or store file swapped for one that fails the rule
      refuse(e.report)
      nil
    rescue StandardError => e
      degrade(*@policy.survive(e))
      nil
    end

    # Writes the deferred queue as one locked append (a few, if it passes LogFile::MAX_WRITE).
    def write_pending
      forget_parent_queue
      return if @pending.nil? || @pending.empty?

      pending = @pending
      @pending = {}
      guarded_write do
        with_write_lock do |file|
          buf = String.new(encoding: Encoding::BINARY)
          entries = []
          pending.each do |key, value|
            delete = value.equal?(DELETED)
            next if delete && !@map.key?(key)

            flags = delete ? Format::DELETE : Format::PUT
            start = buf.bytesize
            Format.frame_into(buf, flags, key, delete ? "" : value)
            entries.push(flags, key, start, buf.bytesize - start)
            next if buf.bytesize < LogFile::MAX_WRITE

            write_records(file, buf, entries)
            buf = String.new(encoding: Encoding::BINARY)
            entries = []
          end
          write_records(file, buf, entries) unless entries.empty?
          sweep_if_due(file)
        end
      end
    end

    # After fork the child needs its own open file description: flock belongs to the
    # description, so a shared one would not exclude the parent. What the parent queued is the
    # parent's to write.
    def check_fork
      forget_parent_queue
      return unless @reopen_needed

      @reopen_needed = false
      reopen
    end

    # In a forked child, the queue inherited from the parent is the parent's to write.
    def forget_parent_queue
      return if @pid == @process.pid

      @pid = @process.pid
      @pending&.clear
      @reopen_needed = true
    end

    # A new descriptor for the store file; if it is another file (compacted), a new map too.
    def reopen
      old = @file
      @file = @opener.reopen
      old&.close
      reload if old.nil? || old.ino != @file.ino || old.dev != @file.dev
    end

    # The map of @file read again (Opener#load): another process cut or replaced the file.
    def reload
      adopt(@opener.load(@file))
    end

    # Takes what an Opener or a Compaction returned (+newer+ and +foreign+, once seen, stay).
    def adopt(state)
      @file = state.file
      @map = state.map
      @end = state.end
      @last = state.last
      @settled_end = state.end # see #sweep_if_due
      @swept = state.swept || 0
      @hint_end = state.hint_end
      @newer ||= state.newer
      @foreign ||= state.foreign
    end

    # The file or its hint fails the trust rule: nothing more is read from it or written to it.
    def refuse(report)
      @file&.close
      @file = nil
      @map = KeyMap.new
      @end = 0
      @last = -1
      @writable = false
      @refused = true
      @pending&.clear
      @policy.refused(report)
    end

    # fail_safe: stop writing, say so once.
    def degrade(problem, fix)
      @writable = false
      @pending&.clear
      @policy.degraded(problem, fix)
    end
  end
end

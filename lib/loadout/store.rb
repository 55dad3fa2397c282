# frozen_string_literal: true

require_relative "error"
require_relative "instrumentation"

module Loadout
  # Defined before its parts reopen it: a part's `class Store` would otherwise trigger the
  # Store autoload while this file is being required (Ruby warns about the circular require).
  class Store; end
end

require_relative "trust"
require_relative "store/format"
require_relative "store/log_file"
require_relative "store/index"
require_relative "store/hint"
require_relative "store/problems"
require_relative "store/registry"
require_relative "store/failure_policy"
require_relative "store/opener"
require_relative "store/compaction"
require_relative "store/writer"
require_relative "store/claim"
require_relative "store/enumeration"

module Loadout
  # A crash-safe, append-only key/value log shared by many processes (Bitcask-style): every cache
  # lives in one. Keys and values are binary Strings.
  #
  #   store = Loadout::Store.open("tmp/cache/loadout.store", fail_safe: true)
  #   store.put("k", "v"); store.get("k") # => "v"
  #
  # - Records are CRC-framed (see Store::Format); a get re-checks the CRC and key every time, so a
  #   damaged record is a miss, never wrong bytes.
  # - Appends take flock only around "check the tail + one write(2)"; readers never lock.
  # - Open reads the hint file (PATH.hint) and scans only what was appended after it.
  # - fail_safe: true never raises for environment problems: one warning, then read-only or empty.
  # - defer_writes: true queues puts/deletes in memory until #flush, #close or process exit.
  # - The store, hint and temp files follow the trust rule (Loadout::Trust): a store file that
  #   fails it (another owner, writable by others, a symlink, a FIFO...) is neither read nor
  #   written; trust_shared_cache: true accepts group-writable files.
  class Store
    include Writer
    include Claim
    include Enumeration

    DELETED = Object.new.freeze # a queued delete in the defer_writes queue
    private_constant :DELETED, :LogState, :FailurePolicy, :Opener, :Compaction, :Writer, :Enumeration

    # Opens (creating when writable) the store at +path+; with a block, yields it and closes it.
    #: (String, ?readonly: bool, ?fail_safe: bool, ?defer_writes: bool, ?trust_shared_cache: bool)
    #:   ?{ (Store) -> untyped } -> Store
    def self.open(path, readonly: false, fail_safe: false, defer_writes: false, trust_shared_cache: false)
      { readonly: readonly, fail_safe: fail_safe, defer_writes: defer_writes,
        trust_shared_cache: trust_shared_cache }.each do |name, value|
        raise ConfigError.new(name, value, "true or false") unless value == true || value == false
      end
      store = new(path, readonly: readonly, fail_safe: fail_safe, defer_writes: defer_writes,
                        shared: trust_shared_cache)
      return store unless block_given?

      begin
        yield store
      ensure
        store.close
      end
    end

    def initialize(path, readonly:, fail_safe:, defer_writes:, shared: false)
      @path = path.respond_to?(:to_path) ? path.to_path : String(path)
      @shared = shared
      @fail_safe = fail_safe
      @pending = defer_writes ? {} : nil
      @pid = Process.pid
      @mutex = Mutex.new
      @closed = false
      @binary_encoding = Encoding::BINARY
      @string_class = String
      # Read once (see LogFile#initialize): claims run once per file a cold boot compiles.
      @format, @put_flag, @record_header, @max_log = Format, Format::PUT, Format::HEADER, Format::MAX_LOG
      @deleted, @process = DELETED, Process
      @policy = FailurePolicy.new(@path, fail_safe, shared)
      @opener = Opener.new(@path, shared, @policy)
      @compaction = Compaction.new(@path, shared)
      @newer = @foreign = nil
      adopt(opened = @opener.open(readonly))
      @refused = opened.refused || false
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
          return value.equal?(DELETED) ? nil : value.dup
        end
        packed = @index.lookup(key)
        packed && read_value(key, packed)
      end
    end

    # A key or value over the limits (Format::MAX_KEY, MAX_VALUE) raises ArgumentError; with
    # fail_safe the key is deleted instead, so a get never returns the value it replaced.
    #: (String, String) -> nil
    def put(key, value)
      key = binary(key)
      value = binary(value)
      return oversized(key, value) unless Format.within_limits?(key.bytesize, value.bytesize)
      return nil if @mutex.owned? # a write from code loaded inside the store's own work: dropped

      @mutex.synchronize do
        next unless writing?

        if @pending
          forget_parent_queue
          @pending[key] = value.frozen? ? value : value.dup.freeze
          next
        end
        buf = Format.frame_into(String.new(capacity: Format::HEADER + key.bytesize + value.bytesize, encoding: Encoding::BINARY),
                                Format::PUT, key, value)
        guarded_write do
          with_write_lock do |file|
            write_records(file, buf, [Format::PUT, key, 0, buf.bytesize])
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
          @pending[key] = DELETED if @pending.key?(key) || @index.key?(key)
          next
        end
        guarded_write do
          with_write_lock do |file|
            next unless @index.key?(key)

            buf = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::DELETE, key, "")
            write_records(file, buf, [Format::DELETE, key, 0, buf.bytesize])
            sweep_if_due(file)
          end
        end
      end
      nil
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
      warn "loadout: closing store #{@path} at exit failed: #{e.class}: #{e.message}" unless @fail_safe
    end

    def inspect
      "#<#{self.class} #{@path}#{" (read-only)" unless writable?}>"
    end

    private

    def read_value(key, packed)
      value = @file.read_value(key, packed)
      return value if value

      @index.drop_corrupt(key)
      Instrumentation.emit(:corrupt, @path, cache: :store, reason: :checksum) if Instrumentation.enabled?
      nil
    rescue StandardError => e
      @policy.survive(e) # raises unless fail_safe
      nil
    end

    # Constants are avoided on this path (every get): Ruby 3.1 drops all constant caches each
    # time a class or module is defined, so a boot would look them up again on every call.
    def binary(str)
      return str if str.is_a?(@string_class) && @binary_encoding.equal?(str.encoding)
      raise ArgumentError, "keys and values must be Strings, got #{str.class}" unless str.is_a?(String)

      str.b
    end
  end
end

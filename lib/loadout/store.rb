# frozen_string_literal: true

require "loadout/error"
require "loadout/instrumentation"
require_relative "trust"
require "loadout/store/format"
require "loadout/store/log_file"
require "loadout/store/index"
require "loadout/store/hint"
require "loadout/store/problems"
require "loadout/store/registry"
require "loadout/store/opener"
require "loadout/store/writer"
require "loadout/store/compaction"

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
    include Opener
    include Writer
    include Compaction

    DELETED = Object.new.freeze # a queued delete in the defer_writes queue
    private_constant :DELETED, :Opener, :Writer, :Compaction

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
      @readonly = readonly
      @shared = shared
      @refused = false
      @fail_safe = fail_safe
      @pending = defer_writes ? {} : nil
      @pid = Process.pid
      @mutex = Mutex.new
      @warned = false
      @closed = false
      @file = nil
      @end = 0
      @hint_end = -1
      @index = Index.new
      @binary_encoding = Encoding::BINARY
      @string_class = String
      open_file
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

    # The value stored under +key+ (a new binary String), or nil.
    #: (String) -> String?
    def get(key)
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

    #: (String) -> bool
    def key?(key)
      key = binary(key)
      @mutex.synchronize do
        if @pending&.key?(key)
          !@pending[key].equal?(DELETED)
        else
          @index.key?(key)
        end
      end
    end

    #: (String, String) -> nil
    def put(key, value)
      key = binary(key)
      value = binary(value)
      Format.check_lengths(key.bytesize, value.bytesize)
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
            maybe_auto_compact(file)
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
            maybe_auto_compact(file)
          end
        end
      end
      nil
    end

    # Yields every live key and value (values read and checked one at a time).
    #: () { (String, String) -> void } -> void
    def each
      return enum_for(:each) unless block_given?

      keys = @mutex.synchronize { @index.keys | (@pending ? @pending.keys : []) }
      keys.each do |key|
        value = get(key)
        yield key, value if value
      end
      self
    end

    #: () -> Integer
    def size
      @mutex.synchronize do
        n = @index.size
        @pending&.each do |key, value|
          if value.equal?(DELETED)
            n -= 1 if @index.key?(key)
          elsif !@index.key?(key)
            n += 1
          end
        end
        n
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
        { live_records: @index.size, live_bytes: @index.live_bytes,
          garbage_records: @index.garbage_records, garbage_bytes: @index.garbage_bytes,
          corrupt_records: @index.corrupt_records, corrupt_bytes: @index.corrupt_bytes,
          file_size: file_size, pending_writes: @pending ? @pending.size : 0, writable: writable? }
      end
    end

    # Rewrites the log with live records only. Returns true when it compacted.
    #: () -> bool
    def compact
      @mutex.synchronize do
        next false unless writing?

        write_pending
        done = guarded_write do
          with_write_lock { |file| compact_locked(file) }
          true
        end
        done == true
      end
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

    def close_locked
      return if @closed

      write_pending if @writable && @pid == Process.pid
      write_hint if @writable && @file && @end != @hint_end && @pid == Process.pid && !@refused
      @closed = true
      @file&.close
      Registry.remove(self)
    end

    def write_hint
      @hint_end = @end if Hint.write(@path, @file, @index, @end, @shared)
    end

    def writing?
      return true if @writable && !@closed
      return false if @fail_safe

      raise StoreError.new(@path, "is closed", "open it again") if @closed
      raise StoreError.new(@path, *Problems.foreign) if @foreign

      raise StoreError.new(@path, *Problems.readonly)
    end

    def read_value(key, packed)
      value = @file.read_value(key, packed)
      return value if value

      @index.drop_corrupt(key)
      Instrumentation.emit(:corrupt, @path, cache: :store, reason: :checksum) if Instrumentation.enabled?
      nil
    rescue SystemCallError, IOError => e
      raise store_error(e) unless @fail_safe

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

# frozen_string_literal: true

require_relative "error"
require_relative "store"

module Loadout
  class Journal; end # before its parts reopen it (see store.rb)
end

require_relative "journal/segments"
require_relative "journal/buffer"
require_relative "journal/directory"
require_relative "journal/recovery"
require_relative "journal/segment_writer"
require_relative "journal/sync_mode"
require_relative "journal/term_flush"

module Loadout
  # A durable append/ack/replay log (events that must survive SIGTERM, crashes and restarts).
  #
  #   journal = Loadout::Journal.open("tmp/events", sync: :batch)
  #   id = journal.append(Marshal.dump(event))   # Integer, unique across restarts
  #   journal.ack(id)                            # done with it
  #   journal.pending                            # => [[id, payload], ...] not yet acked, in order
  #
  # sync: decides when #append returns:
  # - :none  - buffered in the process (64 KiB), written when full, on #close, normal exit,
  #            an exception or SIGTERM. Lost on kill -9, exit! or a crash. Fastest.
  # - :flush - written with one write(2) before returning: survives the process being killed,
  #            not a power loss.
  # - :fsync - written and fdatasync(2)ed before returning: survives power loss (if the disk
  #            honours flushes).
  # - :batch - like :fsync, but appends from several threads that arrive while a sync runs share
  #            the next one (group commit).
  # Acks are written like appends but never synced on their own: after a power loss an acked
  # entry can come back in #pending (at-least-once delivery). One process opens a directory at a
  # time. A failed write or fdatasync is final: the journal raises JournalError from then on.
  class Journal
    SYNC_MODES = %i[none flush fsync batch].freeze
    BUFFER = 64 << 10
    RESERVE = 1 << 16 # ids handed out ahead of the last written high-water mark
    private_constant :BUFFER, :RESERVE, :Segments, :Directory, :Recovery, :SegmentWriter, :SyncMode

    @open = {}
    @open_lock = Mutex.new

    class << self
      # Opens (creating) the journal in +dir+.
      #: (String, ?sync: Symbol) -> Journal
      def open(dir, sync: :flush)
        unless SYNC_MODES.include?(sync)
          raise ConfigError.new("sync", sync, SYNC_MODES.map(&:inspect).join(", "))
        end

        journal = new(dir.respond_to?(:to_path) ? dir.to_path : String(dir), sync)
        return journal unless block_given?

        begin
          yield journal
        ensure
          journal.close
        end
      end

      def __register(journal) # :nodoc:
        @open_lock.synchronize do
          at_exit { Journal.__close_all } if @open.empty? && !@hooked
          @hooked = true
          TermFlush.install if journal.sync == :none
          @open[journal.object_id] = journal
        end
      end

      def __unregister(journal) # :nodoc:
        @open_lock.synchronize { @open.delete(journal.object_id) }
      end

      # Called in a forked child: the journals belong to the parent (which holds their lock).
      def __after_fork # :nodoc:
        @open_lock.synchronize { @open.values }.each(&:__forked)
      end

      def __close_all # :nodoc:
        @open_lock.synchronize { @open.values }.each(&:__close_at_exit)
      end
    end

    attr_reader :dir, :sync

    # The journal is composed of a Directory (trust check, LOCK, segment files), what Recovery
    # found in it, a SegmentWriter (buffer, ids, the segment appended to) and the SyncMode chosen
    # from +sync+. It holds the lock that orders them and whether it is still usable.
    def initialize(dir, sync)
      @dir = dir
      @sync = sync
      @mutex = Mutex.new
      @pid = Process.pid
      @closed = false
      @directory = Directory.new(dir)
      @writer = nil
      guard_open do
        @directory.lock
        recovered = Recovery.run(@directory)
        @corrupt_records = recovered.corrupt_records
        @writer = SegmentWriter.new(@directory, recovered)
        @mode = SyncMode.for(sync, @writer)
        @mode.flush if recovered.good_end.zero? # a new segment's first record, synced in :fsync/:batch
      end
      Journal.__register(self)
    end

    # Appends +payload+; returns its id (ids only grow, and are never reused, even after restarts).
    #: (String) -> Integer
    def append(payload)
      id = @mode.append_unlocked(payload) # :none frames it under the next id without the lock
      return id if id && id > 0

      append_locked(id, payload)
    end

    # Marks +id+ done: it no longer appears in #pending.
    #: (Integer) -> nil
    def ack(id)
      raise ArgumentError, "id must be an Integer, got #{id.inspect}" unless id.is_a?(Integer) && id > 0

      @mutex.synchronize do
        usable!
        @writer.ack(id)
        @mode.acked
      end
      nil
    end

    # [[id, payload], ...] appended and not acked, oldest first, including from earlier runs.
    #: () -> Array[[Integer, String]]
    def pending
      @mutex.synchronize do
        usable!
        @writer.drain
        @directory.pending
      end
    end

    # Starts a new segment holding only the pending entries and removes the old ones.
    #: () -> nil
    def rotate
      @mutex.synchronize do
        usable!
        @writer.rotate
      end
      nil
    end

    # Damaged records found in the middle of a segment when the journal was opened (each one a
    # lost entry, or a lost ack whose entry comes back in #pending). A torn tail (a writer that
    # died mid-record) is not counted: it is expected after a crash and is cut off.
    #: () -> Integer
    def corrupt_records
      @corrupt_records || 0
    end

    # Writes what is buffered (and syncs it in :fsync/:batch) and releases the directory.
    #: () -> nil
    def close
      @mutex.synchronize do
        return nil if @closed

        begin
          @mode.flush if @writer.failure.nil? && @pid == Process.pid
        ensure
          @closed = true
          @writer.close
          @directory.unlock
          Journal.__unregister(self)
        end
      end
      nil
    end

    def closed?
      @closed
    end

    def __close_at_exit # :nodoc:
      close if @pid == Process.pid
    rescue Error => e
      warn "loadout: #{e.message}"
    end

    def __forked # :nodoc:
      @writer.disable
    end

    def inspect
      "#<#{self.class} #{@dir} sync=#{@sync.inspect}>"
    end

    private

    # The locked part of #append: every mode but :none, and :none when the buffer filled (+id+ is
    # then -id), the id block ran out or the journal cannot take appends (+id+ nil).
    def append_locked(id, payload)
      raise TypeError, "payload must be a String, got #{payload.class}" unless payload.is_a?(String)

      target = @mutex.synchronize do
        usable! unless id && @pid == Process.pid
        id ||= @writer.append(payload)
        @mode.appended
      end
      @writer.group_commit(target) if target
      id.abs
    end

    def usable!
      failure = @writer.failure
      raise failure if failure
      raise JournalError.new(@dir, "is closed", "open it again") if @closed
      return if @pid == Process.pid

      raise JournalError.new(@dir, "was opened by process #{@pid}", "open the journal again in this process")
    end

    def guard_open
      yield
    rescue JournalError
      @directory.unlock
      raise
    rescue Trust::Refused => e
      @directory.unlock
      @directory.refuse(e.report)
    rescue SystemCallError, IOError => e
      @directory.unlock
      problem, fix = Store::Problems.describe(e, @dir)
      raise JournalError.new(@dir, problem, fix.sub("the cache", "the journal"))
    end
  end

  # Ruby 3.1+ lets us see fork: the child's copies of open journals stop accepting appends at
  # once (older Rubies notice on the next call that takes the lock, via the pid check in usable!).
  module JournalForkHook # :nodoc:
    def _fork
      pid = super
      Journal.__after_fork if pid.zero?
      pid
    end
  end
  private_constant :JournalForkHook
  Process.singleton_class.prepend(JournalForkHook) if Process.respond_to?(:_fork)
end

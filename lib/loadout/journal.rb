# frozen_string_literal: true

require_relative "error"
require_relative "store"

module Loadout
  class Journal; end # before its parts reopen it (see store.rb)
end

require_relative "journal/segments"
require_relative "journal/buffer"
require_relative "journal/recovery"
require_relative "journal/writing"
require_relative "journal/rotation"
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
    include Recovery
    include Writing
    include Rotation
    private_constant :BUFFER, :RESERVE, :Segments, :Recovery, :Writing, :Rotation

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

    def initialize(dir, sync)
      @dir = dir
      @sync = sync
      @mutex = Mutex.new
      @sync_mutex = Mutex.new
      @pid = Process.pid
      extend(BufferedAppend) if sync == :none
      @ok = true # false once failed, closed or forked; then usable! raises
      @failed = nil
      @closed = false
      guard_open { open_dir }
      Journal.__register(self)
    end

    # Appends +payload+; returns its id (ids only grow, and are never reused, even after restarts).
    #: (String) -> Integer
    def append(payload)
      raise TypeError, "payload must be a String, got #{payload.class}" unless payload.is_a?(String)

      target = nil
      id = @mutex.synchronize do
        usable!
        id = (@buffer.append(payload) || reserve_and_append(payload)).abs
        drain
        if @sync == :fsync
          sync_now
        elsif @sync == :batch
          target = @written_total
        end
        id
      end
      group_commit(target) if target
      id
    end

    # Marks +id+ done: it no longer appears in #pending.
    #: (Integer) -> nil
    def ack(id)
      raise ArgumentError, "id must be an Integer, got #{id.inspect}" unless id.is_a?(Integer) && id > 0

      @mutex.synchronize do
        usable!
        @buffer.frame_id(Store::Format::DELETE, id, "")
        drain unless @sync == :none && !@buffer.full?
      end
      nil
    end

    # [[id, payload], ...] appended and not acked, oldest first, including from earlier runs.
    #: () -> Array[[Integer, String]]
    def pending
      @mutex.synchronize do
        usable!
        drain
        pending_entries
      end
    end

    # Starts a new segment holding only the pending entries and removes the old ones.
    #: () -> nil
    def rotate
      @mutex.synchronize do
        @sync_mutex.synchronize do
          usable!
          drain
          rotate_locked
        end
      end
      nil
    end

    # Writes what is buffered (and syncs it in :fsync/:batch) and releases the directory.
    #: () -> nil
    def close
      @mutex.synchronize do
        return nil if @closed

        begin
          if @failed.nil? && @pid == Process.pid
            drain
            sync_now if @sync == :fsync || @sync == :batch
          end
        ensure
          @closed = true
          @ok = false
          @buffer&.disable
          @io&.close
          @lock_io&.close
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
      @ok = false
      @buffer&.disable
    end

    def inspect
      "#<#{self.class} #{@dir} sync=#{@sync.inspect}>"
    end

    private

    def usable!
      raise @failed if @failed
      raise JournalError.new(@dir, "is closed", "open it again") if @closed
      return if @pid == Process.pid

      raise JournalError.new(@dir, "was opened by process #{@pid}", "open the journal again in this process")
    end

    # A failed write or sync is final (after an fdatasync error the kernel may have dropped the
    # dirty pages, so retrying could report success for lost data).
    def fail!(error, what)
      @ok = false
      @buffer&.disable
      @failed = JournalError.new(@dir, "#{what} failed: #{error.message}",
                                 "check the disk, then reopen the journal (everything acknowledged before this is kept)")
      raise @failed
    end

    def guard_open
      yield
    rescue JournalError
      @lock_io&.close
      raise
    rescue Trust::Refused => e
      @lock_io&.close
      refuse(e.report)
    rescue SystemCallError, IOError => e
      @lock_io&.close
      problem, fix = Store::Problems.describe(e, @dir)
      raise JournalError.new(@dir, problem, fix.sub("the cache", "the journal"))
    end
  end

  class Journal
    # The :none hot path, mixed into :none journals: one call that frames the record under the
    # next id (atomically: it holds the GVL, or a Mutex in the Ruby twin) and returns it.
    module BufferedAppend # :nodoc:
      def append(payload)
        id = @buffer.append(payload)
        return id if id && id > 0

        append_slow(id, payload)
      end
    end
    private_constant :BufferedAppend
  end

  # Ruby 3.1+ lets us see fork: the child's copies of open journals stop accepting appends at
  # once (older Rubies notice on the next write(2), via the pid check in usable!).
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

# frozen_string_literal: true

module Loadout
  class Journal
    # The sync: modes (see Journal), one object per journal chosen when it opens: each decides
    # when #append, #ack and #close wait for the SegmentWriter. All but #append_unlocked run
    # under the journal's lock.
    module SyncMode # :nodoc:
      def self.for(sync, writer)
        case sync
        when :none then None.new(writer)
        when :flush then Flush.new(writer)
        when :fsync then Fsync.new(writer)
        else Batch.new(writer)
        end
      end

      # :flush: one write(2) before #append or #ack returns.
      class Flush
        def initialize(writer)
          @writer = writer
        end

        # An append that needs no lock: the id, -id (framed, but the buffer is full), or nil when
        # the journal must take its lock (always, except in :none).
        def append_unlocked(_payload)
          nil
        end

        # After an append was framed: gets it as far as the mode promises. Returns the byte count
        # a group commit (SegmentWriter#group_commit, run after the lock is released) must cover,
        # or nil.
        def appended
          @writer.drain
          nil
        end

        # After an ack was framed.
        def acked
          @writer.drain
        end

        # Everything framed so far, as far as the mode promises (on #close, and after the record
        # that opens a new segment).
        def flush
          @writer.drain
        end
      end

      # :none: appends are framed straight into the buffer without the lock (the buffer holds the
      # GVL, or a Mutex in its Ruby twin), written when it fills, on #close, normal exit or SIGTERM.
      class None < Flush
        def initialize(writer)
          super
          @buffer = writer.buffer
        end

        def append_unlocked(payload)
          @buffer.append(payload)
        end

        def appended
          @writer.drain if @buffer.full?
          nil
        end

        def acked
          @writer.drain if @buffer.full?
        end
      end

      # :fsync: written and fdatasynced before #append returns (acks are written, never synced on
      # their own).
      class Fsync < Flush
        def appended
          @writer.drain
          @writer.sync
          nil
        end

        def flush
          @writer.drain
          @writer.sync
        end
      end

      # :batch: like :fsync, but appends that arrive while a sync runs share the next one.
      class Batch < Fsync
        def appended
          @writer.drain
          @writer.written_total
        end
      end
    end
  end
end

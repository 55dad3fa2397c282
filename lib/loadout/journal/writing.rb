# frozen_string_literal: true

module Loadout
  class Journal
    # Getting bytes to the disk: id reservation, one write(2) per drain, fdatasync (direct, from
    # C, errors final) and group commit for :batch.
    module Writing # :nodoc:
      private

      # :none, when the buffer filled, the id block ran out or the journal cannot take appends.
      def append_slow(id, payload)
        @mutex.synchronize do
          if id.nil?
            usable!
            id = reserve_and_append(payload)
          end
          drain if @buffer.full?
          id.abs
        end
      end

      # Hands out ids in blocks: the high-water mark is written (one write(2)) before any id above
      # the last one is returned, so a restart after kill -9 never reuses an id, even in :none.
      def reserve_and_append(payload)
        usable!
        @reserved = @buffer.next_id + RESERVE - 1
        @buffer.frame(Store::Format::META, Segments::IDS_KEY, [@reserved].pack("Q>"))
        drain
        @buffer.reserved = @reserved
        @buffer.append(payload) || raise(JournalError.new(@dir, "could not reserve an id", "report this as a bug"))
      end

      # Writes the buffered records with one write(2) (callers hold @mutex).
      def drain
        return if @buffer.empty?

        usable! if @pid != Process.pid
        buf = @buffer.take
        n = @io.syswrite(buf)
        raise Errno::ENOSPC, "short write (#{n} of #{buf.bytesize} bytes)" if n != buf.bytesize

        @written_total += n
      rescue SystemCallError, IOError => e
        cut_back
        fail!(e, "write")
      end

      # Removes a partial record left by a failed write (ENOSPC shows up as a short count first).
      def cut_back
        @io.truncate(@written_total - @segment_base)
      rescue SystemCallError, IOError
        nil
      end

      def sync_now
        Store::Format.fdatasync(@io)
        @synced = @written_total
      rescue SystemCallError, IOError => e
        fail!(e, "fdatasync")
      end

      # Group commit: whoever takes @sync_mutex first syncs everything written so far; the appends
      # that queued behind it find their bytes already covered and return without a second sync.
      def group_commit(target)
        @sync_mutex.synchronize do
          return if @synced >= target

          upto = @written_total
          begin
            Store::Format.fdatasync(@io)
          rescue SystemCallError, IOError => e
            fail!(e, "fdatasync") # not under @mutex: rotate takes @mutex then @sync_mutex
          end
          @synced = upto
        end
      end
    end
  end
end

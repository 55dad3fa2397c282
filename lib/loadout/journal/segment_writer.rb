# frozen_string_literal: true

require_relative "../binary_file"
require_relative "segments"

module Loadout
  class Journal
    # Getting records to the disk: the in-process buffer and the block of ids it may hand out, the
    # segment being appended to (one write(2) per drain, fdatasync from C, group commit for :batch)
    # and rotation to a new segment. Callers hold the journal's lock, except around #group_commit;
    # the writer's own sync lock orders #group_commit and #rotate.
    #
    # A failed write or sync is final (after an fdatasync error the kernel may have dropped the
    # dirty pages, so retrying could report success for lost data): the writer keeps the error
    # (#failure, which the journal raises from then on) and stops the buffer taking appends.
    class SegmentWriter # :nodoc:
      attr_reader :buffer, :written_total, :failure

      # Opens the last segment +recovered+ (a Recovery::Findings) names for appending, cutting off
      # its torn tail; a segment with no record yet gets the ids record that opens every segment
      # (written, not synced: the journal's sync mode decides).
      def initialize(directory, recovered)
        @directory = directory
        @dir = directory.path
        @segment_no = recovered.segment_no
        @reserved = recovered.high_water
        @buffer = Buffer.new(@reserved + 1, @reserved, BUFFER)
        @sync_mutex = Mutex.new
        @failure = nil
        @io = directory.open(directory.segment(@segment_no), File::WRONLY | File::CREAT | File::APPEND)
        good_end = recovered.good_end
        @io.truncate(good_end) if good_end < recovered.size # a writer died mid-record; only we write here
        @segment_base = 0
        @written_total = good_end
        @synced = good_end
        return unless good_end.zero?

        @buffer.frame(Store::Format::META, Segments::IDS_KEY, [@reserved].pack("Q>"))
        drain
      end

      # Frames +payload+ under the next id and returns it (-id when the buffer is now full).
      # Hands out ids in blocks: the high-water mark is written (one write(2)) before any id above
      # the last one is returned, so a restart after kill -9 never reuses an id, even in :none.
      def append(payload)
        id = @buffer.append(payload)
        return id if id

        @reserved = @buffer.next_id + RESERVE - 1
        @buffer.frame(Store::Format::META, Segments::IDS_KEY, [@reserved].pack("Q>"))
        drain
        @buffer.reserved = @reserved
        @buffer.append(payload) || raise(JournalError.new(@dir, "could not reserve an id", "report this as a bug"))
      end

      # Frames the ack of +id+ (a DELETE record).
      def ack(id)
        @buffer.frame_id(Store::Format::DELETE, id, "")
      end

      # Writes the buffered records with one write(2).
      def drain
        return if @buffer.empty?

        buf = @buffer.take
        n = @io.syswrite(buf)
        raise Errno::ENOSPC, "short write (#{n} of #{buf.bytesize} bytes)" if n != buf.bytesize

        @written_total += n
      rescue SystemCallError, IOError => e
        cut_back
        fail!(e, "write")
      end

      # fdatasync of everything written so far.
      def sync
        Store::Format.fdatasync(@io)
        @synced = @written_total
      rescue SystemCallError, IOError => e
        fail!(e, "fdatasync")
      end

      # Group commit (called without the journal's lock): whoever takes the sync lock first syncs
      # everything written so far; the appends that queued behind it find their bytes (up to
      # +target+) already covered and return without a second sync.
      def group_commit(target)
        @sync_mutex.synchronize do
          return if @synced >= target

          upto = @written_total
          begin
            Store::Format.fdatasync(@io)
          rescue SystemCallError, IOError => e
            fail!(e, "fdatasync")
          end
          @synced = upto
        end
      end

      # Starts a new segment holding only the pending entries, synced, then unlinks the old ones.
      # A crash in between leaves duplicates, which Directory#pending folds by id; a half-written
      # new segment is removed (it is newer than the live ones, so recovery would read it).
      def rotate
        @sync_mutex.synchronize do
          raise @failure if @failure

          drain
          number = @segment_no + 1
          buf = new_segment(number)
          old = @directory.segments.select { |n| n < number }
          @segment_no = number
          @segment_base = @written_total
          @written_total += buf.bytesize
          @synced = @written_total
          old.each { |n| File.unlink(@directory.segment(n)) }
          @directory.fsync
        end
      end

      # Stops the buffer taking appends (closed, failed or forked: the journal raises from then on).
      def disable
        @buffer.disable
      end

      def close
        @buffer.disable
        @io.close
      end

      private

      # Writes segment +number+ (the ids record, then every pending entry), syncs it and the
      # directory, and makes it the one appended to. Returns its bytes.
      def new_segment(number)
        path = @directory.segment(number)
        buf = Segments.ids_record(String.new(encoding: Encoding::BINARY), [@reserved, @buffer.next_id - 1].max)
        @directory.pending.each { |id, payload| Store::Format.frame_id_into(buf, Store::Format::PUT, id, payload) }
        io = @directory.open(path, File::WRONLY | File::CREAT | File::TRUNC | File::APPEND)
        done = false
        begin
          written = 0
          written += io.syswrite(buf.byteslice(written, buf.bytesize - written)) while written < buf.bytesize
          Store::Format.fdatasync(io)
          @directory.fsync
          done = true
        rescue SystemCallError, IOError => e
          fail!(e, "rotate")
        ensure
          unless done
            BinaryFile.close_quietly(io)
            BinaryFile.unlink_quietly(path)
          end
        end
        @io.close
        @io = io
        buf
      end

      # Removes a partial record left by a failed write (ENOSPC shows up as a short count first).
      def cut_back
        @io.truncate(@written_total - @segment_base)
      rescue SystemCallError, IOError
        nil
      end

      def fail!(error, what)
        @buffer.disable
        fix = "check the disk, then reopen the journal (everything acknowledged before this is kept)"
        @failure = JournalError.new(@dir, "#{what} failed: #{error.message}", fix)
        raise @failure
      end
    end
  end
end

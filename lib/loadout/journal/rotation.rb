# frozen_string_literal: true

require_relative "../binary_file"

module Loadout
  class Journal
    # Reading back (#pending) and rotating: a new segment with just the pending entries, synced,
    # then the old segments are unlinked. A crash in between leaves duplicates, which #pending
    # folds by id.
    module Rotation # :nodoc:
      private

      def pending_entries
        live = {}
        Segments.numbers(@dir).each do |n|
          Segments.read(Segments.path(@dir, n)) do |flags, id, payload|
            if flags == Store::Format::PUT
              live[id] = payload
            elsif flags == Store::Format::DELETE
              live.delete(id)
            end
          end
        end
        live.sort_by { |id, _| id }
      rescue Trust::Refused => e
        refuse(e.report)
      end

      def rotate_locked
        entries = pending_entries
        number = @segment_no + 1
        path = Segments.path(@dir, number)
        buf = Segments.ids_record(String.new(encoding: Encoding::BINARY), [@reserved, @buffer.next_id - 1].max)
        entries.each { |id, payload| Store::Format.frame_id_into(buf, Store::Format::PUT, id, payload) }
        io = open_checked(path, File::WRONLY | File::CREAT | File::TRUNC | File::APPEND)
        done = false
        begin
          written = 0
          written += io.syswrite(buf.byteslice(written, buf.bytesize - written)) while written < buf.bytesize
          Store::Format.fdatasync(io)
          fsync_dir
          done = true
        rescue SystemCallError, IOError => e
          fail!(e, "rotate")
        ensure
          # A half-written segment goes (it is newer than the live ones, so recovery would read it).
          unless done
            BinaryFile.close_quietly(io)
            BinaryFile.unlink_quietly(path)
          end
        end
        old = Segments.numbers(@dir).select { |n| n < number }
        @io.close
        @io = io
        @segment_no = number
        @segment_base = @written_total
        @written_total += buf.bytesize
        @synced = @written_total
        old.each { |n| File.unlink(Segments.path(@dir, n)) }
        fsync_dir
      end

      def fsync_dir
        File.open(@dir, File::RDONLY, binmode: true) { |d| d.fsync }
      rescue SystemCallError, IOError
        nil
      end
    end
  end
end

# frozen_string_literal: true

require "fileutils"
require_relative "../binary_file"

module Loadout
  class Journal
    # Opening: take the directory's LOCK, read every segment for the id high-water mark, cut a
    # torn tail off the last segment and open it for appending.
    module Recovery # :nodoc:
      # Damaged records found in the middle of a segment when the journal was opened (each one a
      # lost entry, or a lost ack whose entry comes back in #pending). A torn tail (a writer that
      # died mid-record) is not counted: it is expected after a crash and is cut off.
      #: () -> Integer
      def corrupt_records
        @corrupt_records || 0
      end

      private

      def open_dir
        FileUtils.mkdir_p(@dir)
        @lock_io = BinaryFile.open(File.join(@dir, "LOCK"), File::RDWR | File::CREAT)
        unless @lock_io.flock(File::LOCK_EX | File::LOCK_NB)
          @lock_io.close
          raise JournalLockedError.new(@dir, "is open in another process (or another Journal object)",
                                       "close it there first, or use another directory")
        end
        recover
      end

      # Reads every segment for the id high-water mark, cuts a torn tail off the last one and opens
      # it for appending.
      def recover
        numbers = Segments.numbers(@dir)
        max_id = 0
        good_end = size = 0
        @corrupt_records = 0
        damaged = []
        numbers.each do |n|
          good_end, size, newer, bad = Segments.read(Segments.path(@dir, n)) do |_flags, id, _payload|
            max_id = id if id && id > max_id
          end
          if bad > 0
            @corrupt_records += bad
            damaged << File.basename(Segments.path(@dir, n))
          end
          next unless newer

          raise JournalError.new(Segments.path(@dir, n), "was written by a newer loadout",
                                 "upgrade loadout to read this journal")
        end
        warn_corrupt(damaged) unless damaged.empty?
        @segment_no = numbers.last || 1
        @reserved = max_id
        @buffer = Buffer.new(max_id + 1, max_id, BUFFER)
        path = Segments.path(@dir, @segment_no)
        @io = BinaryFile.open(path, File::WRONLY | File::CREAT | File::APPEND)
        @io.truncate(good_end) if good_end < size # a writer died mid-record; only we write here
        @segment_base = 0
        @written_total = good_end
        @synced = good_end
        return unless good_end.zero?

        @buffer.frame(Store::Format::META, Segments::IDS_KEY, [@reserved].pack("Q>"))
        drain
        sync_now unless @sync == :none || @sync == :flush
      end

      # One warning per open, whatever the number of damaged records.
      def warn_corrupt(segments)
        warn "loadout: journal #{@dir}: #{@corrupt_records} damaged record(s) skipped in #{segments.join(", ")} " \
             "(each one an entry lost, or an ack lost so its entry is pending again); the disk or another " \
             "writer damaged the file: check it (Journal#corrupt_records counts them)"
      end
    end
  end
end

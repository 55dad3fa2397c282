# frozen_string_literal: true

require "fileutils"
require_relative "../binary_file"

module Loadout
  class Journal
    # Opening: take the directory's LOCK, read every segment for the id high-water mark, cut a
    # torn tail off the last segment and open it for appending.
    module Recovery # :nodoc:
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
        numbers.each do |n|
          good_end, size, newer, = Segments.read(Segments.path(@dir, n)) do |_flags, id, _payload|
            max_id = id if id && id > max_id
          end
          next unless newer

          raise JournalError.new(Segments.path(@dir, n), "was written by a newer loadout",
                                 "upgrade loadout to read this journal")
        end
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
    end
  end
end

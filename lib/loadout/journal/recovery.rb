# frozen_string_literal: true

require_relative "../binary_file"
require_relative "../trust"

module Loadout
  class Journal
    # Opening: check the directory against the trust rule, take its LOCK, read every segment for
    # the id high-water mark, cut a torn tail off the last segment and open it for appending.
    module Recovery # :nodoc:
      # Damaged records found in the middle of a segment when the journal was opened (each one a
      # lost entry, or a lost ack whose entry comes back in #pending). A torn tail (a writer that
      # died mid-record) is not counted: it is expected after a crash and is cut off.
      #: () -> Integer
      def corrupt_records
        @corrupt_records || 0
      end

      private

      # The journal replays its payloads into the app, so its directory follows the cache's trust
      # rule (Loadout::Trust): the directory and its parents (up to the first sticky world-writable
      # one, like /tmp) owned by this user or root and writable by no one else; every file opened
      # without following symlinks and checked as opened.
      def open_dir
        check_dir
        @lock_io = open_checked(File.join(@dir, "LOCK"), File::RDWR | File::CREAT)
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
        @io = open_checked(path, File::WRONLY | File::CREAT | File::APPEND)
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

      def check_dir
        dir = File.expand_path(@dir)
        report = Trust.walk(dir, nil, false)
        if report && Trust.unusable?(report)
          Trust.make_dirs(dir, false) # raises what is in the way, if anything
          report = Trust.walk(dir, nil, false)
        end
        refuse(report) if report
      end

      # Opens a file of the journal (O_NOFOLLOW|O_NONBLOCK, 0600) and checks it as opened.
      def open_checked(path, flags)
        Trust.open_file(path, flags, false).first
      rescue Trust::Refused => e
        refuse(e.report)
      end

      # (Trust::Words.fix is asked as for a shared cache: a journal has no shared-group option.)
      def refuse(report)
        fix = "#{Trust::Words.fix(report, true)} (the journal replays what it holds into this program)"
        raise JournalError.new(@dir, Trust::Words.problem(report), fix)
      end
    end
  end
end

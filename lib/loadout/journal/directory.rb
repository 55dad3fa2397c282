# frozen_string_literal: true

require_relative "../trust"
require_relative "segments"

module Loadout
  class Journal
    # The journal's directory: checked against the trust rule, held with its LOCK for the
    # journal's lifetime, and the segment files in it (opened, listed, read back).
    #
    # The journal replays its payloads into the app, so its directory follows the cache's trust
    # rule (Loadout::Trust): the directory and its parents (up to the first sticky world-writable
    # one, like /tmp) owned by this user or root and writable by no one else; every file opened
    # without following symlinks and checked as opened.
    class Directory # :nodoc:
      attr_reader :path

      def initialize(path)
        @path = path
        @lock_io = nil
      end

      # Checks the directory (creating it) and takes its LOCK; raises JournalError if another
      # process (or another Journal object) holds it.
      def lock
        check
        @lock_io = open(File.join(@path, "LOCK"), File::RDWR | File::CREAT)
        return if @lock_io.flock(File::LOCK_EX | File::LOCK_NB)

        unlock
        raise JournalLockedError.new(@path, "is open in another process (or another Journal object)",
                                     "close it there first, or use another directory")
      end

      # Releases the LOCK (closing its descriptor).
      def unlock
        @lock_io&.close
        @lock_io = nil
      end

      # Opens a file of the journal (O_NOFOLLOW|O_NONBLOCK, 0600) and checks it as opened.
      def open(path, flags)
        Trust.open_file(path, flags, false).first
      rescue Trust::Refused => e
        refuse(e.report)
      end

      def segment(number)
        Segments.path(@path, number)
      end

      # Segment numbers present, ascending.
      def segments
        Segments.numbers(@path)
      end

      # [[id, payload], ...] appended and not acked, across every segment, by id (a crash during
      # a rotation leaves an entry in two segments: it is listed once).
      def pending
        live = {}
        segments.each do |n|
          Segments.read(segment(n)) do |flags, id, payload|
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

      # Makes renames and unlinks in the directory durable (where the file system allows it).
      def fsync
        File.open(@path, File::RDONLY, binmode: true) { |d| d.fsync }
      rescue SystemCallError, IOError
        nil
      end

      # Raises the JournalError for a file or directory that fails the trust rule.
      # (Trust::Words.fix is asked as for a shared cache: a journal has no shared-group option.)
      def refuse(report)
        fix = "#{Trust::Words.fix(report, true)} (the journal replays what it holds into this program)"
        raise JournalError.new(@path, Trust::Words.problem(report), fix)
      end

      private

      def check
        dir = File.expand_path(@path)
        report = Trust.walk(dir, nil, false)
        if report && Trust.unusable?(report)
          Trust.make_dirs(dir, false) # raises what is in the way, if anything
          report = Trust.walk(dir, nil, false)
        end
        refuse(report) if report
      end
    end
  end
end

# frozen_string_literal: true

require_relative "segments"

module Loadout
  class Journal
    # What opening finds in the segments, read once: the id high-water mark (every id up to it may
    # have been handed out), the last segment and where its last whole record ends, and the damaged
    # records skipped on the way. The SegmentWriter cuts the torn tail off and appends after it.
    class Recovery # :nodoc:
      # segment_no: the segment to append to (1 in an empty directory); high_water: the largest id
      # any record or META "ids" record names; good_end, size: where the last valid record of that
      # segment ends, and its size (a torn tail lies between); corrupt_records: damaged records in
      # the middle of a segment (see Journal#corrupt_records).
      Findings = Struct.new(:segment_no, :high_water, :good_end, :size, :corrupt_records)

      # Reads every segment of +directory+ (a Directory); warns once if any record was damaged.
      # Raises JournalError for a segment a newer loadout wrote, Trust::Refused for one that fails
      # the trust rule.
      def self.run(directory)
        new(directory).run
      end

      def initialize(directory)
        @directory = directory
      end

      def run
        numbers = @directory.segments
        high_water = 0
        good_end = size = corrupt = 0
        damaged = []
        numbers.each do |n|
          path = @directory.segment(n)
          good_end, size, newer, bad = Segments.read(path) do |_flags, id, _payload|
            high_water = id if id && id > high_water
          end
          if bad > 0
            corrupt += bad
            damaged << File.basename(path)
          end
          next unless newer

          raise JournalError.new(path, "was written by a newer loadout", "upgrade loadout to read this journal")
        end
        warn_corrupt(corrupt, damaged) unless damaged.empty?
        Findings.new(numbers.last || 1, high_water, good_end, size, corrupt)
      end

      private

      # One warning per open, whatever the number of damaged records. A torn tail (a writer that
      # died mid-record) is not counted: it is expected after a crash and is cut off.
      def warn_corrupt(count, segments)
        warn "loadout: journal #{@directory.path}: #{count} damaged record(s) skipped in #{segments.join(", ")} " \
             "(each one an entry lost, or an ack lost so its entry is pending again); the disk or another " \
             "writer damaged the file: check it (Journal#corrupt_records counts them)"
      end
    end
  end
end

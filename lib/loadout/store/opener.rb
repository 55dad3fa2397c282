# frozen_string_literal: true

require_relative "../error"
require_relative "../instrumentation"
require_relative "../trust"
require_relative "format"
require_relative "log_file"
require_relative "index"
require_relative "hint"
require_relative "problems"

module Loadout
  class Store
    # What a store file opens to (and what a reload or a compaction leaves), for Store#adopt: the
    # LogFile (nil: none, an empty store), its key map, the end of what the map covers, the end of
    # what the hint covered (-1: no hint matched), whether a record of a newer format version
    # (+newer+) or no valid record at all (+foreign+: not a store file) was found, and (from
    # Opener#open) whether the file or its hint failed the trust rule (+refused+: nothing read).
    LogState = Struct.new(:file, :index, :end, :hint_end, :newer, :foreign, :refused)

    # Opening: the file (creating its directory), then the key map from the hint plus a scan of
    # what follows it, or a scan of the whole log. Used again under the append lock to read what
    # other processes appended (#catch_up) and to reload a file another process replaced (#load).
    class Opener # :nodoc:
      def initialize(path, shared, policy)
        @path = path
        @shared = shared
        @policy = policy # a FailurePolicy: raise, or warn once and carry on
      end

      # Opens the store file read-only (a missing file is an empty store) or for writing (creating
      # its directory; when the file system refuses that, fail_safe serves the file read-only),
      # loads its map and checks what it holds. Problems go to the FailurePolicy: raised, or with
      # fail_safe one warning and an empty state (+refused+ when the trust rule failed). The file
      # it opened is closed again whatever fails.
      #: (bool) -> LogState
      def open(readonly)
        file = readonly ? open_readonly : open_writable
        return empty unless file

        done = false
        begin
          state = load(file)
          @policy.opened(state.newer, state.foreign, state.index.corrupt_records)
          done = true
          state
        ensure
          file.close unless done
        end
      rescue Trust::Refused => e
        @policy.refused(e.report)
        empty.tap { |s| s.refused = true }
      rescue StandardError => e
        @policy.degraded(*@policy.survive(e))
        empty
      end

      # The map of +file+: from a matching hint and a scan of what follows it, or a scan of it all.
      #: (LogFile) -> LogState
      def load(file)
        index, covered = Hint.load(@path, file, @shared)
        state = index ? LogState.new(file, index, covered, covered) : LogState.new(file, Index.new, 0, -1)
        size = file.size
        if size > state.end
          state.end, state.newer, foreign, = catch_up(file, state.index, state.end, size)
          state.foreign = true if foreign
        end
        state
      end

      # Reads +file+ from +from+ to +size+ into +index+. Returns [good end, newer, foreign, read end]:
      # where the last valid record ends (what lies between it and the read end is a torn tail, or
      # garbage no valid record follows), whether a record of a newer format version stopped the
      # scan, and whether the file is no store file at all (bytes, but no valid record from 0).
      #: (LogFile, Index, Integer, Integer) -> [Integer, bool, bool, Integer]
      def catch_up(file, index, from, size)
        buf = file.pread(size - from, from)
        entries, good_end, bad_records, bad_bytes, newer = Format.parse(buf, from)
        index.apply_entries(entries)
        index.add_corrupt(bad_records, bad_bytes)
        if bad_records > 0 && Instrumentation.enabled?
          Instrumentation.emit(:corrupt, @path, cache: :store, reason: :checksum, records: bad_records)
        end
        foreign = from.zero? && good_end.zero? && !newer && buf.bytesize >= Format::HEADER &&
                  buf.byteslice(0, 2) != Format::MAGIC
        [good_end, newer, foreign, from + buf.bytesize]
      end

      # The store file opened again for writing (in a forked child, or after another process
      # replaced it); one that now fails the trust rule raises StoreError.
      #: () -> LogFile
      def reopen
        LogFile.open(@path, true, @shared)
      rescue Trust::Refused => e
        raise StoreError.new(@path, Trust::Words.problem(e.report), Trust::Words.fix(e.report, @shared))
      end

      private

      def empty
        LogState.new(nil, Index.new, 0, -1)
      end

      def open_readonly
        LogFile.open(@path, false, @shared)
      rescue Errno::ENOENT
        nil # a missing store is an empty one
      end

      def open_writable
        dir = File.dirname(@path)
        Trust.make_dirs(dir, @shared) unless File.directory?(dir)
        LogFile.open(@path, true, @shared)
      rescue Errno::EACCES, Errno::EPERM, Errno::EROFS, Errno::ENOSPC, Errno::EDQUOT => e
        raise unless @policy.survivable?(e)

        # Serve what is there, read-only; a missing file just means an empty store.
        @policy.degraded(*Problems.describe(e, @path))
        open_readonly
      end
    end
  end
end

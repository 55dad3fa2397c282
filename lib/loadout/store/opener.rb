# frozen_string_literal: true

require_relative "../error"
require_relative "../instrumentation"
require_relative "../trust"
require_relative "format"
require_relative "log_file"
require_relative "key_map"
require_relative "hint"

module Loadout
  class Store
    # What a store file opens to (and what a reload, a scan or a compaction leaves), for
    # Store#adopt: the LogFile (nil: none, an empty store), its key map, the end of what the map
    # covers, where the last record before that end starts (-1: none), the end of what the hint
    # covered (-1: no hint matched), whether a record of a newer format version (+newer+) or no
    # valid record at all (+foreign+: not a store file) was found, and (from Opener#open) whether
    # the file or its hint failed the trust rule (+refused+: nothing read), and where the hint
    # says the log needed no sweep (+swept+, Compaction#due; nil or 0: unknown).
    LogState = Struct.new(:file, :map, :end, :last, :hint_end, :newer, :foreign, :refused, :swept)

    # Opening: the store's directory (creating it), the file in it, then the key map from the hint
    # plus a scan of what follows it, or a scan of the whole log. Used again under the append lock
    # to read what other processes appended (#catch_up), to read a file again from its first
    # byte (#scan: a torn tail is cut only after that) and to reload a file another process
    # replaced (#load).
    class Opener # :nodoc:
      # The directory of +path+ held open (Trust::DirHandle), creating it unless +readonly+; nil
      # when there is none (or, with fail_safe, when it cannot be made or opened: said once).
      #: (String, bool, bool, FailurePolicy) -> Trust::DirHandle?
      def self.open_dir(path, readonly, shared, policy)
        dir = File.dirname(path)
        Trust.make_dirs(dir, shared) unless readonly || File.directory?(dir)
        Trust::DirHandle.open(dir, shared)
      rescue Errno::ENOENT
        nil # a missing store is an empty one
      rescue StandardError => e
        policy.degraded(*policy.survive(e)) # raises unless fail_safe
        nil
      end

      def initialize(dir, name, shared, policy, hint)
        @dir = dir # Trust::DirHandle, or nil: no directory, an empty store
        @name = name
        @shared = shared
        @policy = policy # a FailurePolicy: raise, or warn once and carry on
        @hint = hint
      end

      # Opens the store file read-only (a missing file is an empty store) or for writing (when
      # the file system refuses that, fail_safe serves the file read-only), loads its map and
      # checks what it holds. Problems go to the FailurePolicy: raised, or with fail_safe one
      # warning and an empty state (+refused+ when the trust rule failed). The file it opened is
      # closed again whatever fails.
      #: (bool) -> LogState
      def open(readonly)
        return empty unless @dir

        file = readonly ? open_readonly : open_writable
        return empty unless file

        done = false
        begin
          state = load(file)
          @policy.opened(state.newer, state.foreign, state.map.corrupt_records)
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

      # The map of +file+: from a hint that names it and a scan of what follows it, or a scan of
      # it all.
      #: (LogFile) -> LogState
      def load(file)
        map, covered, last, swept = @hint.load(file)
        return scan(file) unless map

        state = LogState.new(file, map, covered, last, covered, nil, nil, nil, swept)
        size = file.size
        return state unless size > covered

        state.end, state.newer, foreign, _, last = catch_up(file, map, covered, size)
        state.last = last if last
        state.foreign = true if foreign
        state
      end

      # The map of +file+ read from its first byte (no hint).
      #: (LogFile) -> LogState
      def scan(file)
        map = KeyMap.new
        good, newer, foreign, _, last = catch_up(file, map, 0, file.size)
        LogState.new(file, map, good, last || -1, -1, newer, foreign)
      end

      # Reads +file+ from +from+ to +size+ into +map+. Returns [good end, newer, foreign, read end,
      # last]: where the last valid record ends (what lies between it and the read end is a torn
      # tail, or garbage no valid record follows) and where it starts (nil: no valid record read),
      # whether a record of a newer format version stopped the scan, and whether the file is no
      # store file at all (bytes, but no valid record from 0).
      #: (LogFile, KeyMap, Integer, Integer) -> [Integer, bool, bool, Integer, Integer?]
      def catch_up(file, map, from, size)
        buf = file.pread(size - from, from)
        entries, good_end, bad_records, bad_bytes, newer = Format.parse(buf, from)
        map.apply_entries(entries)
        map.add_corrupt(bad_records, bad_bytes)
        if bad_records > 0 && Instrumentation.enabled?
          Instrumentation.emit(:corrupt, @dir.path_of(@name), cache: :store, reason: :checksum, records: bad_records)
        end
        foreign = from.zero? && good_end.zero? && !newer && buf.bytesize >= Format::HEADER &&
                  buf.byteslice(0, 2) != Format::MAGIC
        [good_end, newer, foreign, from + buf.bytesize, entries.empty? ? nil : entries[-2]]
      end

      # The store file opened again for writing (in a forked child, or after another process
      # replaced it); one that now fails the trust rule raises StoreError.
      #: () -> LogFile
      def reopen
        LogFile.open(@dir, @name, true)
      rescue Trust::Refused => e
        raise StoreError.new(@dir.path_of(@name), Trust::Words.problem(e.report), Trust::Words.fix(e.report, @shared))
      end

      private

      def empty
        LogState.new(nil, KeyMap.new, 0, -1, -1)
      end

      def open_readonly
        LogFile.open(@dir, @name, false)
      rescue Errno::ENOENT
        nil # a missing store is an empty one
      end

      def open_writable
        LogFile.open(@dir, @name, true)
      rescue Errno::EACCES, Errno::EPERM, Errno::EROFS, Errno::ENOSPC, Errno::EDQUOT => e
        raise unless @policy.survivable?(e)

        # Serve what is there, read-only; a missing file just means an empty store.
        @policy.degraded(*Problems.describe(e, @dir.path_of(@name)))
        open_readonly
      end
    end
  end
end

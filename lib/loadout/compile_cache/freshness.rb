# frozen_string_literal: true

require_relative "xxh64"
require_relative "entry"

module Loadout
  module CompileCache
    # Whether a stored entry still describes the file on disk: the one place the rule is written
    # (C: ext/loadout/freshness.c, Native.cc_judge; the twin below). Every handler, `loadout
    # check` and loadout's own self cache ask it, through Entries#judge or directly.
    #
    # 1. The entry must be intact (magic, version, lengths; else CORRUPT).
    # 2. Trusted files (racy_ns -1: `trust: :stable`/`:all`) are fresh without a stat.
    # 3. One stat (else MISSING). FRESH when size, mtime (ns), ctime, inode and device equal the
    #    recorded ones and the entry was verified at least racy_ns after that ctime. ctime cannot
    #    be set from user space, so an edit that restores the old mtime (touch -r, tar, rsync -t)
    #    still moves it. The racy rule is git's: a file changed in the same timestamp tick as its
    #    verification could have changed after it was read without its ctime moving.
    # 4. A file of another size is STALE. Else the stat record an earlier revalidation appended
    #    decides: the judge never reads the store itself, it answers UNVOUCHED and the caller
    #    (Entries#judge) fetches the record and asks again. A record for the same source digest,
    #    checked the same way, makes it FRESH_BY_RECORD.
    # 5. Else the file's XXH64 decides: equal means only the metadata moved (git clone, CI cache
    #    restore, touch): REVALIDATED, with the stat record that makes the next boot a one-stat
    #    hit again; different means STALE.
    # 6. A fresh entry that is negative (Ruby must do the work: a syntax error; a value that
    #    cannot be stored) is NEGATIVE; one flagged for -w warnings, under -w, WARNS. The payload's
    #    bytes are not checked here: the CRC32C frame every entry is read through (a store
    #    record, the self cache file) covers them.
    #
    # The verdict is one small Integer, below (the low four bits name it). The three that serve a
    # payload carry MOVED when it was made for another place (another path, or another inode
    # than the one that vouched), which an ISeq must be relocated for; any verdict reached by
    # reading the file's bytes carries RECORDED when the record String passed in now holds the
    # file's new stat record (to append). When the payload is served at this very place, or the
    # verdict is NEGATIVE, the entry String the caller passed has become the payload (cut in
    # place: no object, no copy); otherwise it is left whole.
    module Freshness # :nodoc:
      CORRUPT = 0
      MISSING = 1
      STALE = 2
      NEGATIVE = 3
      WARNS = 4
      FRESH = 5
      FRESH_BY_RECORD = 6
      REVALIDATED = 7
      UNVOUCHED = 8
      MOVED = 16
      RECORDED = 32
      NAMES = %i[corrupt missing stale negative warns fresh fresh_by_record revalidated unvouched].freeze

      RACY_NS = 2_000_000_000 # two seconds: filesystems with one- and two-second timestamps (= Native::CC_RACY_NS)
      RECORD_SIZE = 64

      @native = BACKEND == :native ? Native : nil # the judge
      @stat = @native # #identity (kept apart: the tests switch the judge's backend alone)
      @version = FORMAT_VERSION
      @entry = Entry # (hot path: see ARCHITECTURE.md)

      class << self
        # The verdict on +blob+ (an entry's bytes, a String the caller owns) for +path+. +record+:
        # nil when the stat record was not looked up, else its bytes ("" when there is none),
        # replaced by the new record when the content is revalidated. UNVOUCHED (only without a
        # record): look the record up and ask again; an entry verified within the racy window of
        # its ctime gets it without a stat, since only the record can vouch for it. With
        # +revalidate+ false a file no stat vouches for is STALE without being read. +version+:
        # the entry format accepted. nil for arguments it does not take.
        #: (String, String, Integer, bool, bool, String?, ?Integer) -> Integer?
        def judge(blob, path, racy_ns, verbose, revalidate, record, version = @version)
          native = @native
          return native.cc_judge(blob, path, version, racy_ns, verbose, revalidate, record) if native

          judge_in_ruby(blob, path, version, racy_ns, verbose, revalidate, record)
        end

        # The verdict's name (:fresh, :stale, ...), for reports and tests.
        def verdict_name(verdict) #: (Integer) -> Symbol
          NAMES.fetch(verdict & 15)
        end

        # Whether +verdict+ serves the entry's payload (fresh, fresh by record, revalidated).
        def served?(verdict) #: (Integer) -> bool
          (verdict & 15) >= FRESH && (verdict & 15) <= REVALIDATED
        end

        if BACKEND == :native
          # [size, mtime_ns, ctime_ns, ino, dev] of +path+ (symlinks followed), nil when stat fails:
          # the fields an entry records and the judge compares.
          def identity(path) #: (String) -> Array[Integer]?
            @stat.file_identity(path)
          end
        else
          def identity(path)
            st = File.stat(path)
            [st.size, time_ns(st.mtime), time_ns(st.ctime), st.ino, st.dev]
          rescue SystemCallError
            nil
          end
        end

        def now_ns #: () -> Integer
          Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
        end

        private

        def time_ns(time)
          (time.tv_sec * 1_000_000_000) + time.tv_nsec
        end

        def judge_in_ruby(blob, path, version, racy_ns, verbose, revalidate, record)
          return nil unless blob.is_a?(String) && !blob.frozen? && path.is_a?(String) && !path.include?("\0")
          return nil unless racy_ns.is_a?(Integer) && (record.nil? || record.is_a?(String))

          entry = @entry.load(blob, version) or return CORRUPT
          here = entry.compiled_at?(path)
          return settle(blob, entry, verbose, FRESH, !here) if racy_ns.negative?

          # Verified within the racy window of its ctime: only the stat record can vouch.
          return UNVOUCHED if record.nil? && entry.verified - entry.ctime < racy_ns

          id = identity(path) or return MISSING
          return settle(blob, entry, verbose, FRESH, !here) if vouches?(id, entry, racy_ns)
          return STALE unless id[0] == entry.size
          return UNVOUCHED unless record

          stat = @entry.load_stat(record, version)
          if stat && stat.digest == entry.digest && vouches?(id, stat, racy_ns)
            return settle(blob, entry, verbose, FRESH_BY_RECORD, !here)
          end
          return STALE unless revalidate

          verified = now_ns # before the bytes are read: an edit racing the read moves ctime past it
          digest = XXH64.file(path) or return MISSING
          return STALE unless digest == entry.digest

          recorded = record.frozen? ? 0 : RECORDED
          record.replace(@entry.dump_stat(id, verified, digest, version)) unless record.frozen?
          verdict = settle(blob, entry, verbose, REVALIDATED, !here || id[3] != entry.ino || id[4] != entry.dev)
          verdict | recorded
        end

        def settle(blob, entry, verbose, verdict, moved)
          if entry.negative?
            blob.replace(entry.payload)
            return NEGATIVE
          end
          return WARNS if verbose && (entry.flags & Entry::VERBOSE_WARNINGS) != 0
          return verdict | MOVED if moved

          blob.replace(entry.payload)
          verdict
        end

        # Whether +rec+ (an Entry or an Entry::Stat) describes the file identity +id+ now, outside
        # the racy window.
        def vouches?(id, rec, racy_ns)
          id[0] == rec.size && id[1] == rec.mtime && id[2] == rec.ctime && rec.verified - rec.ctime >= racy_ns &&
            id[3] == rec.ino && id[4] == rec.dev
        end
      end
    end
  end
end

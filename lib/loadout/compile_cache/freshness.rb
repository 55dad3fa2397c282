# frozen_string_literal: true

require_relative "digest"
require_relative "entry"
require_relative "key"

module Loadout
  module CompileCache
    # Whether a stored entry still describes the file on disk: the one place the rule is written
    # (C: ext/loadout/freshness.c, Native.cc_judge; the twin below). ISeq, the YAML/JSON values,
    # `loadout check` and loadout's own self cache all ask it.
    #
    # 1. The entry must be intact (magic, version, lengths; else :corrupt).
    # 2. Trusted files (racy_ns -1: `trust: :stable`/`:all`) are fresh without a stat.
    # 3. One stat (else :missing). Fresh when size, mtime (ns), ctime, inode and device equal the
    #    recorded ones and the entry was verified at least racy_ns after that ctime. ctime cannot
    #    be set from user space, so an edit that restores the old mtime (touch -r, tar, rsync -t)
    #    still moves it. The racy rule is git's: a file changed in the same timestamp tick as its
    #    verification could have changed after it was read without its ctime moving.
    # 4. Else the stat record an earlier revalidation appended (looked up only now), for the same
    #    source digest, checked the same way (:fresh_by_record).
    # 5. Else a different size is :stale; otherwise the file's XXH64 decides: equal means only
    #    the metadata moved (git clone, CI cache restore, touch): :revalidated, with the stat
    #    record that makes the next boot a one-stat hit again; different means :stale.
    # 6. A fresh entry whose payload digest does not match is :corrupt; a negative one (Ruby must
    #    do the work: a syntax error) is :negative; one flagged for -w warnings, under -w, :warns.
    #
    # An answer is the payload alone in the common cases (fresh at this very path, by its stat or
    # by its stat record: every boot after a checkout), else [verdict, payload, record, moved]: moved says the payload was compiled for another
    # place (another path, or another inode than the one that vouched), which an ISeq must be
    # relocated for.
    module Freshness # :nodoc:
      RACY_NS = 2_000_000_000 # two seconds: filesystems with one- and two-second timestamps (= Native::CC_RACY_NS)
      FRESH = %i[fresh fresh_by_record revalidated].freeze

      @native = BACKEND == :native ? Native : nil
      @version = FORMAT_VERSION
      @entry = Entry
      @digest = Digest
      # A judgement names no constant (see ISeq: on Ruby 3.1 each would cost a cache object per
      # call once a class is defined); these stand for them.
      @string = String
      @integer = Integer

      class << self
        # The judgement of +blob+ (an entry's bytes) for +path+; see above. +lookup+: nil, or a
        # callable whose call(key) returns the stat record's bytes for +key+. With +revalidate+
        # false, a file whose stat does not vouch is :stale without being read. +version+: the
        # entry format accepted.
        #: (String, String, Integer, bool, bool, untyped, String?, ?Integer) -> (String | Array[untyped])?
        def judge(blob, path, racy_ns, verbose, revalidate, lookup, key, version = @version)
          # (The native call checks its arguments itself: nil for any it does not take.)
          native = @native
          return native.cc_judge(blob, path, version, racy_ns, verbose, revalidate, lookup, key) if native
          return nil unless path.is_a?(@string) && !path.include?("\0") && racy_ns.is_a?(@integer) # String, Integer

          judge_in_ruby(blob, path, version, racy_ns, verbose, revalidate, lookup, key)
        end

        # The handlers' use of #judge: the stat record comes from +ctx+'s store and a record a
        # revalidation made is appended there (unless read-only). Returns the payload alone in the
        # common cases (fresh here by stat or stat record), else [verdict, payload, moved].
        def serve(ctx, blob, path, key, verbose)
          racy = ctx.trusted?(path) ? -1 : ctx.racy_ns
          result = judge(blob, path, racy, verbose, true, ctx.stat_lookup, key) or return [:corrupt, nil, false]
          return result if result.is_a?(@string) # String

          verdict, payload, record, moved = result
          ctx.store.put(ctx.stat_key(key), record.freeze) if record && !ctx.readonly # (frozen: queued as is)
          [verdict, payload, moved]
        end

        def now_ns #: () -> Integer
          Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
        end

        private

        def judge_in_ruby(blob, path, version, racy_ns, verbose, revalidate, lookup, key)
          entry = @entry.load(blob, version, check_payload: false) or return answer(:corrupt)
          here = entry.compiled_at?(path)
          return settle(blob, entry, verbose, :fresh, !here, nil) if racy_ns.negative?

          id = @digest.identity(path) or return answer(:missing)
          return settle(blob, entry, verbose, :fresh, !here, nil) if vouches?(id, entry, racy_ns)

          if lookup
            stat = @entry.load_stat(lookup.call(key), version)
            if stat && stat.digest == entry.digest && vouches?(id, stat, racy_ns)
              return settle(blob, entry, verbose, :fresh_by_record, !here, nil)
            end
          end
          return answer(:stale) unless revalidate && id[0] == entry.size

          verified = now_ns # before the bytes are read: an edit racing the read moves ctime past it
          digest = @digest.file(path) or return answer(:missing)
          return answer(:stale) unless digest == entry.digest

          moved = !here || id[3] != entry.ino || id[4] != entry.dev
          settle(blob, entry, verbose, :revalidated, moved, @entry.dump_stat(id, verified, digest, version))
        end

        def answer(verdict)
          [verdict, nil, nil, false]
        end

        def settle(blob, entry, verbose, verdict, moved, record)
          return answer(:corrupt) unless entry.payload_intact?

          verdict = :negative if entry.negative?
          verdict = :warns if verdict != :negative && verbose && (entry.flags & Entry::VERBOSE_WARNINGS) != 0
          return [verdict, entry.payload, record, moved] unless (verdict == :fresh || verdict == :fresh_by_record) && !moved

          blob.frozen? ? entry.payload : blob.replace(entry.payload)
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

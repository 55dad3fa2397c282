# frozen_string_literal: true

require_relative "digest"
require_relative "entry"

module Loadout
  module CompileCache
    # Decides whether a cached entry still describes the file on disk.
    #
    # 1. One stat. Fresh when size, mtime (ns) and ctime equal the recorded ones and the entry
    #    was verified at least RACY_NS after that ctime. ctime cannot be set from user space, so
    #    an edit that restores the old mtime (touch -r, tar, rsync -t) still moves it. The racy
    #    rule is git's: a file changed in the same timestamp tick as our verification could have
    #    changed after we read it without its ctime moving, so such an entry is not trusted by
    #    stat alone.
    # 2. The stat record appended by an earlier revalidation, checked the same way.
    # 3. A different size means different content: stale. Otherwise the file's XXH64 decides:
    #    equal means only the metadata moved (git clone, CI cache restore, touch) and a small
    #    stat record is appended so the next boot is back to one stat; different means stale.
    class Validator # :nodoc:
      # Two seconds covers filesystems with one- and two-second timestamps.
      RACY_NS = 2_000_000_000

      Result = Struct.new(:state, :identity, :record)

      attr_accessor :racy_ns

      def initialize(store, readonly)
        @store = store
        @readonly = readonly
        @racy_ns = RACY_NS
        # Not named per call: Ruby 3.1 drops every constant cache each time a class is defined
        # (once per file a boot loads), and a CI boot (every mtime moved) runs #check per file.
        @digest = Digest
        @key = Key
        @entry = Entry
        @stat = Entry::Stat
        @process = Process
        @realtime = Process::CLOCK_REALTIME
      end

      # Returns [state, identity]: state is :fresh, :revalidated, :stale or :missing (the file
      # cannot be stat'ed or read); identity is the file's [size, mtime, ctime, ino, dev] and
      # the third element the Entry::Stat that vouched for it, if one did.
      # +stat_blob+: the stat record's bytes (or nil) when the caller already read them.
      #: (String, Entry, String, ?Array[Integer]?, ?(String | Symbol)?) -> [Symbol, Array[Integer]?, Entry::Stat?]
      def check(path, entry, key, id = nil, stat_blob = :unread)
        id ||= @digest.identity(path) or return [:missing, nil, nil]
        return [:fresh, id, nil] if same?(id, entry.size, entry.mtime, entry.ctime, entry.verified)
        return [:stale, id, nil] unless id[0] == entry.size

        stat_key = @key.stat_key(key)
        stat_blob = @store.get(stat_key) if stat_blob == :unread
        record = @entry.load_stat(stat_blob)
        if record && record.digest == entry.digest && same?(id, record.size, record.mtime, record.ctime, record.verified)
          return [:fresh, id, record]
        end

        verified = now_ns
        digest = @digest.file(path) or return [:missing, id, nil]
        return [:stale, id, nil] unless digest == entry.digest

        record = @stat.new(id[0], id[1], id[2], verified, id[3], id[4], digest)
        @store.put(stat_key, @entry.dump_stat(id, verified, digest)) unless @readonly
        [:revalidated, id, record]
      end

      # #check's revalidation for the common case, in one call (Entry.revalidated_payload): the
      # payload of +blob+ when the file's bytes are still the ones it was compiled from, after
      # appending the stat record that says so under +stat_key+; nil leaves the case to #check.
      # A CI boot (every mtime moved) takes this path for every file.
      #: (String, String, bool, String) -> String?
      def revalidated_payload(blob, path, verbose, stat_key)
        record = String.new
        payload = @entry.revalidated_payload(blob, path, verbose, record) or return nil
        @store.put(stat_key, record) unless @readonly
        payload
      end

      # The common case of #check without its result Array (a cache hit allocates as little as
      # it can): #identity, then #fresh?; when not fresh, #check gets the identity back so the
      # file is not stat'ed twice.
      def identity(path) #: (String) -> Array[Integer]?
        @digest.identity(path)
      end

      def fresh?(id, entry) #: (Array[Integer], Entry) -> bool
        same?(id, entry.size, entry.mtime, entry.ctime, entry.verified)
      end

      def now_ns #: () -> Integer
        @process.clock_gettime(@realtime, :nanosecond)
      end

      private

      def same?(id, size, mtime, ctime, verified)
        id[0] == size && id[1] == mtime && id[2] == ctime && verified - ctime >= @racy_ns
      end
    end
  end
end

# frozen_string_literal: true

require_relative "key"
require_relative "freshness"

module Loadout
  module CompileCache
    # The compile cache's side of the store, shared by every handler: entries are read, judged
    # and written here, so each handler's own code is only what it does with a payload.
    #
    # #judge is the one way an entry is judged during a boot: it asks Freshness with the entry's
    # own stat first and, only when that does not vouch, reads the entry's stat record from the
    # store and asks again (the judge itself never calls back into Ruby); the record a content
    # revalidation produces is appended here, never the payload again.
    class Entries # :nodoc:
      attr_reader :store, :key, :counters

      # +key+: the Key that names entries; +trust+: one of Config::TRUST_LEVELS (see
      # CompileCache.install!); +racy_ns+: Freshness's racy window.
      def initialize(store, key:, counters:, readonly:, trust:, racy_ns:)
        @store = store
        @key = key
        @counters = counters
        @readonly = readonly
        @trust_all = trust == :all
        @trust_stable = trust == :stable
        @racy_ns = racy_ns
        @freshness = Freshness # (hot path: see ARCHITECTURE.md)
        @key_class = Key
        @string = String
      end

      # True when nothing may be written (readonly: true, or a store that cannot be written).
      def readonly? #: () -> bool
        @readonly
      end

      # The bytes stored under +key+ (a new String the caller owns), or nil.
      def get(key) #: (String) -> String?
        @store.get(key)
      end

      # Freshness's verdict on +blob+ (the bytes #get returned for +key+) for the file at +path+;
      # see Freshness for what it does to +blob+.
      #: (String, String, String, bool) -> Integer
      def judge(blob, path, key, verbose)
        racy = @trust_all || (@trust_stable && @key.stable?(path)) ? -1 : @racy_ns
        verdict = @freshness.judge(blob, path, racy, verbose, true, nil)
        return verdict unless verdict == 8 # UNVOUCHED (a literal: hot path)

        stat_key = @key_class.stat_key(key)
        record = @store.get(stat_key) || @string.new(capacity: 64)
        verdict = @freshness.judge(blob, path, racy, verbose, true, record)
        @store.put(stat_key, record.freeze) if (verdict & 32) != 0 && !@readonly # RECORDED
        verdict
      end

      # Stores +bytes+ under +key+ (deferred with the store's other writes); nothing when read-only.
      def put(key, bytes) #: (String, String) -> void
        @store.put(key, bytes) unless @readonly
      end

      # Store#claim: writes what the block returns for the current value, under the store's lock.
      def claim(key, &block) #: (String) { (String?) -> String? } -> bool
        !@readonly && @store.claim(key, &block)
      end
    end
  end
end

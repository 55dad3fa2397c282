# frozen_string_literal: true

require_relative "../compile_cache"
require_relative "key"
require_relative "entry"
require_relative "freshness"
require_relative "value_calls"
require_relative "../loaded_files"

module Loadout
  module CompileCache
    # Answers `loadout check` for one file without booting the app and without writing: what
    # would the next boot do with this file's cache entry? It asks Freshness what a boot asks it
    # (with the entry's stat record, as Entries#judge does) and appends nothing (a digest match
    # is reported, not recorded).
    #
    # With a boot's record of what it loaded (LoadedFiles), the exact entry is checked: the ISeq
    # variant that boot used (+variant+), the YAML/JSON store key it looked up (+key+). Without
    # one, ISeq entries are looked up under the variant this process would use (the default
    # compile options), and YAML/JSON ones under the variants of the call shapes the app's boots
    # recorded, else of the common ones (ValueCalls#expected), the best answer winning. A file a
    # boot leaves to its library on purpose (a negative entry: a value that cannot be stored; a
    # YAML file with tags while the app registers custom Psych tags, as Rails does) counts as a
    # hit: the boot does not miss it, it does not try.
    class EntryChecker # :nodoc:
      RANK = { hit: 0, stale: 1, missing: 2 }.freeze

      def initialize(store, roots)
        @store = store
        @key = Key.new(roots)
        @variants = {}
        @custom_tags = nil
      end

      # [status, reason]: status is :hit, :stale or :missing.
      #: (String, Symbol, ?variant: String?, ?key: String?) -> [Symbol, String?]
      def check(path, kind, variant: nil, key: nil)
        path = File.expand_path(path)
        return check_entry(path, key) if key

        keys = kind == :iseq ? [iseq_key(path, variant)] : data_keys(path, kind)
        return [:missing, "no entry"] if keys.empty?

        keys.map { |k| check_entry(path, k) }.min_by { |status, _| RANK.fetch(status) }
      end

      private

      def iseq_key(path, variant)
        @key.for(ISeqHandler::LETTER, variant || LoadedFiles.iseq_variant(@key), path)
      end

      # The stored keys a boot may look +path+ up under (one per expected call shape).
      def data_keys(path, kind)
        letter = kind == :yaml ? YAMLHandler::LETTER : JSONHandler::LETTER
        variants = @variants[kind] ||= ValueCalls.variants(@key, kind, ValueCalls.expected(@store, kind))
        variants.map { |v| @key.for(letter, v, path) }.select { |key| @store.key?(key) }
      end

      # Whether the app's boots had custom Psych tags registered (then a tagged file is Psych's).
      def custom_tags?
        @custom_tags = ValueCalls.recorded(@store)[:custom_tags] if @custom_tags.nil?
        @custom_tags
      end

      def check_entry(path, key)
        blob = @store.get(key) or return [:missing, "no entry"]
        flags = Entry.flags_of(blob)
        verdict = judge(blob, path, key)
        case verdict & 15
        when Freshness::MISSING then [:missing, "file cannot be read"]
        when Freshness::STALE then [:stale, "content changed since it was cached"]
        when Freshness::NEGATIVE
          reason = blob.force_encoding(Encoding::UTF_8)
          [:hit, key.start_with?("cc/i/") ? "Ruby compiles it itself (#{reason})" : "left to the library (#{reason})"]
        when Freshness::FRESH, Freshness::FRESH_BY_RECORD, Freshness::REVALIDATED
          if key.start_with?("cc/y/") && (flags & Entry::TAG_FREE).zero? && custom_tags?
            return [:hit, "left to Psych: it uses YAML tags and the app registers custom ones (Rails does)"]
          end

          revalidated = (verdict & 15) == Freshness::REVALIDATED
          [:hit, revalidated ? "metadata changed, content the same: one digest, then stat hits" : nil]
        else [:stale, "entry is damaged; it will be rebuilt"]
        end
      end

      # Freshness's verdict, with the stat record looked up when the entry's own stat does not
      # vouch, as a boot's Entries#judge does; nothing is appended.
      def judge(blob, path, key)
        verdict = Freshness.judge(blob, path, Freshness::RACY_NS, false, true, nil)
        return verdict unless verdict == Freshness::UNVOUCHED

        Freshness.judge(blob, path, Freshness::RACY_NS, false, true, @store.get(Key.stat_key(key)) || String.new)
      end
    end
  end
end

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
    # would the next boot do with this file's cache entry? It asks Freshness what the boot asks
    # it, and appends nothing (a digest match is reported, not recorded).
    #
    # With a boot's record of what it loaded (LoadedFiles), the exact entry is checked: the ISeq
    # variant that boot used (+variant+), the YAML/JSON store key it looked up (+key+). Without
    # one, ISeq entries are looked up under the variant this process would use (the default
    # compile options), and YAML/JSON ones under the variants of the call shapes the app's boots
    # recorded and of the common ones (ValueCalls), the best answer winning. A YAML file with tags
    # is reported as left to Psych when the app registers custom Psych tags (Rails does).
    class Checker # :nodoc:
      RANK = { hit: 0, stale: 1, missing: 2 }.freeze

      def initialize(store, roots)
        @store = store
        @key = Key.new(roots)
        @lookup = ->(key) { store.get(Key.stat_key(key)) }
        @by_path = nil
      end

      # [status, reason]: status is :hit, :stale or :missing.
      #: (String, Symbol, ?variant: String?, ?key: String?) -> [Symbol, String?]
      def check(path, kind, variant: nil, key: nil)
        path = File.expand_path(path)
        return check_entry(path, key) if key

        keys = kind == :iseq ? [iseq_key(path, variant)] : data_keys(path, kind == :yaml ? "y" : "j")
        return [:missing, "no entry"] if keys.empty?

        keys.map { |k| check_entry(path, k) }.min_by { |status, _| RANK.fetch(status) }
      end

      private

      def iseq_key(path, variant)
        @key.for("i", variant || LoadedFiles.iseq_variant(@key), path)
      end

      # The stored keys a boot may look +path+ up under (one per expected call shape).
      def data_keys(path, letter)
        kind = letter == "y" ? :yaml : :json
        @variants ||= {}
        variants = @variants[kind] ||= begin
          require kind == :yaml ? "yaml" : "json" # the library's version is part of the variant
          ValueCalls.variants(@key, kind, ValueCalls.shapes(@store, kind))
        end
        variants.map { |v| @key.for(letter, v, path) }.select { |key| @store.key?(key) }
      end

      # Whether the app's boots had custom Psych tags registered (then a tagged file is Psych's).
      def custom_tags?
        @custom_tags = ValueCalls.recorded(@store)[:custom_tags] if @custom_tags.nil?
        @custom_tags
      end

      def check_entry(path, key)
        blob = @store.get(key) or return [:missing, "no entry"]
        result = Freshness.judge(blob.freeze, path, Freshness::RACY_NS, false, true, @lookup, key)
        verdict, payload = result.is_a?(String) ? [:fresh, result] : result
        case verdict
        when :missing then [:missing, "file cannot be read"]
        when :stale then [:stale, "content changed since it was cached"]
        when :negative then [:hit, "Ruby compiles it itself (#{payload.dup.force_encoding(Encoding::UTF_8)})"]
        when :fresh, :fresh_by_record, :revalidated
          if key.start_with?("cc/y/") && (blob.getbyte(5) & Entry::TAG_FREE).zero? && custom_tags?
            return [:hit, "left to Psych: it uses YAML tags and the app registers custom ones (Rails does)"]
          end

          [:hit, verdict == :revalidated ? "metadata changed, content the same: one digest, then stat hits" : nil]
        else [:stale, "entry is damaged; it will be rebuilt"]
        end
      end
    end

    class << self
      # `loadout check` for one file: [status, reason] with status :hit, :stale or :missing.
      # +variant+ (ISeq) or +key+ (YAML, JSON): the entry a recorded boot used (see Checker).
      # One Checker per store and roots is reused, so a whole check lists the store once.
      #: (store: untyped, path: String, kind: Symbol, roots: Array[String], ?variant: String?, ?key: String?)
      #:   -> [Symbol, String?]
      def check(store:, path:, kind:, roots:, variant: nil, key: nil)
        raise ConfigError.new(:kind, kind, KINDS.map(&:inspect).join(", ")) unless KINDS.include?(kind)

        @checker = nil unless @checker && @checker_for == [store, roots]
        @checker_for = [store, roots]
        (@checker ||= Checker.new(store, roots)).check(path, kind, variant: variant, key: key)
      end
    end
  end
end

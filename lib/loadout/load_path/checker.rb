# frozen_string_literal: true

module Loadout
  module LoadPath
    # Answers "what will the next boot with this $LOAD_PATH do with the stored index?" without
    # changing anything: it replays Cache#boot!'s decisions (restore by fingerprint, trust or
    # check each entry, fall back to a per-entry listing, else list the directory) against the
    # store and the filesystem, and says which entries a boot would list again and why.
    class Checker # :nodoc:
      RANK = { hit: 0, stale: 1, miss: 2 }.freeze
      SHOWN = 3 # entries named in the one-line reason

      def initialize(store:, ignore:, trust:, roots:)
        @store = store
        @ignore = ignore
        @trust = trust
        @roots = roots
      end

      # +load_path+: the items at install (what the fingerprint covers); +later+: absolute
      # items the app adds afterwards (their listings come from "lp/ent/" keys).
      # Returns { status:, reason:, entries: [{ path:, status:, reason: }] }.
      def call(load_path, later)
        fp = Snapshot.fingerprint(load_path, @ignore, @trust, @roots.stable)
        restored = Snapshot.load_index(@store, fp)
        by_lpath = {}
        restored&.each { |e| by_lpath[e.lpath] = e unless e.kind == :relative || e.opaque? }
        entries = []
        seen = {}
        relative = 0
        load_path.each do |item|
          next unless item.is_a?(String) && !item.empty?
          next relative += 1 unless item.start_with?("/")

          expanded = File.expand_path(item)
          # Ruby (and Cache#refresh) skip an item whose realpath an earlier one has.
          next if seen.key?(realpath(expanded))

          seen[realpath(expanded)] = true
          problem = restored ? restored_problem(by_lpath[item], item, expanded) : listing_problem(item, expanded)
          entries << { path: item, status: problem[0], reason: problem[1] } if problem
        end
        later.each do |item|
          expanded = File.expand_path(item)
          next if seen.key?(realpath(expanded))

          seen[realpath(expanded)] = true
          problem = listing_problem(item, expanded)
          entries << { path: item, status: problem[0], reason: "added after boot; #{problem[1]}" } if problem
        end
        answer(restored, load_path.size, later.size, relative, entries)
      end

      private

      def answer(restored, size, later, relative, entries)
        note = relative.positive? ? "; #{relative} relative item(s) are listed on every boot" : ""
        named = entries.first(SHOWN).map { |e| "#{e[:path]}: #{e[:reason]}" }
        named << "#{entries.size - SHOWN} more" if entries.size > SHOWN
        if restored.nil?
          listed = entries.size
          { status: :miss, entries: entries,
            reason: "no index for this $LOAD_PATH (#{size} items); the boot builds it and lists #{listed} dir(s) without a usable stored listing#{note}" }
        elsif entries.empty?
          { status: :hit, entries: entries,
            reason: "index for this $LOAD_PATH (#{size} items#{", #{later} added after boot" if later.positive?}) restored as stored#{note}" }
        else
          { status: :stale, entries: entries,
            reason: "index found, but #{entries.size} entr#{entries.size == 1 ? "y is" : "ies are"} listed again (#{named.join("; ")})#{note}" }
        end
      end

      # What Cache#adopt_restored and #list! would do with a restored entry; nil when it is used
      # as stored.
      def restored_problem(entry, item, expanded)
        return listing_problem(item, expanded) unless entry # unreadable when stored: listed again

        checked = entry.volatile? || @trust == :none
        return nil if !checked || @trust == :all || entry.fresh?

        # The boot drops the stale listing, then tries the per-entry one (written by a later
        # process) before listing the directory itself.
        fallback = listing_problem(item, expanded)
        return nil unless fallback

        [:stale, describe(entry.changes)]
      end

      # What Cache#list! would do for an entry without a restored listing: nil when the stored
      # per-entry listing is used, else [status, reason].
      def listing_problem(item, expanded)
        entry = Entry.new(item, expanded, @roots.classify(expanded))
        return [:missing, "no stored listing"] unless Snapshot.load_entry(@store, entry, @ignore)

        trusted = entry.kind == :stable ? @trust != :none : @trust == :all
        return nil if trusted || entry.fresh?

        [:stale, describe(entry.changes)]
      end

      def realpath(expanded)
        File.realpath(expanded)
      rescue SystemCallError
        expanded
      end

      def describe(changes)
        return "changed since it was listed" if changes.empty?

        changes.map { |dir, why| "#{dir} #{why}" }.join(", ")
      end
    end
  end
end

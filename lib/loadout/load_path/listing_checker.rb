# frozen_string_literal: true

module Loadout
  module LoadPath
    # Answers "what will the next boot with this $LOAD_PATH do with the stored listings?"
    # without changing anything: for each directory, the decision Lister#fill would make (use the
    # stored listing as is, or list the directory again, and why).
    class ListingChecker # :nodoc:
      SHOWN = 3 # entries named in the one-line reason

      def initialize(lister)
        @lister = lister
      end

      # +load_path+: the items at install; +later+: absolute items the app adds afterwards.
      # Returns { status:, reason:, entries: [{ path:, status:, reason: }] }.
      def call(load_path, later)
        entries = []
        seen = {}
        relative = 0
        (load_path.map { |i| [i, false] } + later.map { |i| [i, true] }).each do |(item, added)|
          next unless item.is_a?(String) && !item.empty?
          next relative += 1 unless item.start_with?("/")

          dir = @lister.load_dir(item)
          next if dir.opaque?

          problem = problem(dir)
          base = dir.base || dir.expanded
          next if seen.key?(base) # Ruby skips a realpath seen before

          seen[base] = true
          next unless problem

          entries << { path: item, status: problem[0], reason: "#{"added after boot; " if added}#{problem[1]}" }
        end
        answer(load_path.size, later.size, relative, entries)
      end

      private

      def problem(dir)
        return nil if @lister.usable?(dir)
        return [:missing, "no stored listing"] unless dir.listing

        [:stale, describe(dir.changes)]
      end

      def answer(size, later, relative, entries)
        note = relative.positive? ? "; #{relative} relative item(s) are left to Ruby" : ""
        named = entries.first(SHOWN).map { |e| "#{e[:path]}: #{e[:reason]}" }
        named << "#{entries.size - SHOWN} more" if entries.size > SHOWN
        if entries.empty?
          { status: :hit, entries: entries,
            reason: "every directory of this $LOAD_PATH " \
                    "(#{size} items#{", #{later} added after boot" if later.positive?}) restored as stored#{note}" }
        elsif entries.any? { |e| e[:status] == :missing }
          { status: :miss, entries: entries,
            reason: "#{entries.size} director#{entries.size == 1 ? "y has" : "ies have"} no usable stored listing " \
                    "and will be listed (#{named.join("; ")})#{note}" }
        else
          { status: :stale, entries: entries,
            reason: "#{entries.size} director#{entries.size == 1 ? "y is" : "ies are"} listed again " \
                    "(#{named.join("; ")})#{note}" }
        end
      end

      def describe(changes)
        return "changed since it was listed" if changes.empty?

        changes.map { |dir, why| "#{dir} #{why}" }.join(", ")
      end
    end
  end
end

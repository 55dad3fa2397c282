# frozen_string_literal: true

require_relative "../last_boot"
require_relative "../loaded_files"

module Loadout
  class CLI
    # `loadout stats`: the store's size and entries per kind and variant (StoreCommands.classify),
    # the last boot's numbers (LastBoot: every boot that may write the cache leaves them, warm
    # boots included) and the files boots load through the compile cache (LoadedFiles: what
    # `loadout check` answers for).
    #
    # Hit rates count every lookup a cache answered or declined: for the load path, hits out of
    # hits + misses + fallbacks (a fallback is a require handed to Ruby's own search); for a
    # compile cache kind, hits and revalidations out of those plus misses, stale, corrupt and
    # skipped entries. Features Ruby already had loaded are not lookups.
    class StatsCommand # :nodoc:
      SERVED = %w[hits revalidated].freeze
      DECLINED = %w[misses stale corrupt skipped fallbacks].freeze
      META = %w[at pid program backend ruby setup_ms wrote].freeze

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        _, ctx = @cli.parse(@argv, "stats", "Usage: loadout stats [--cache-dir DIR]\n\n#{COMMANDS["stats"]}")
        return 0 unless ctx

        unless ctx.store_exists?
          out.puts "loadout: no store at #{ctx.store_path} yet (boot the app or run `loadout precompile`)"
          return 0
        end

        ctx.with_store do |store|
          print_store(ctx, store)
          print_last_boot(LastBoot.read(ctx.store_path))
          print_last_writer(LoadedFiles.load(store))
        end
        0
      end

      private

      def out
        @cli.out
      end

      def print_store(ctx, store)
        out.puts "store:      #{ctx.store_path} (#{StoreCommands.human(File.size(ctx.store_path))})"
        # (What the file holds; not this command's handle on it: its pending writes, read-only open.)
        store_stats = store.respond_to?(:stats) ? store.stats.except(:pending_writes, :writable) : {}
        out.puts "records:    #{store_stats.map { |k, v| "#{k}=#{v}" }.join(" ")}" unless store_stats.empty?
        # (A newer loadout's store is refused when the command opens it: an error, exit 1.)
        kind, what, fix = store.respond_to?(:problem) ? store.problem : nil
        if kind == :foreign
          out.puts "problem:    #{what}: boots neither read nor write it (#{fix}, or `loadout clean --all`)"
        end
        out.puts "entries:    #{store.size} live"
        kinds = Hash.new { |h, k| h[k] = Hash.new(0) }
        store.each do |key, *|
          kind, variant = StoreCommands.classify(key)
          kinds[kind][variant] += 1
        end
        kinds.sort.each do |kind, variants|
          detail = variants.keys == [nil] ? "" : " (#{variants.map { |v, n| "#{v || "-"}: #{n}" }.join(", ")})"
          out.puts format("  %-9s %d%s", kind, variants.values.sum, detail)
        end
      end

      def print_last_boot(record)
        unless record
          out.puts "last boot:  none recorded (a boot that can write the cache dir leaves its numbers there)"
          return
        end

        wrote = record["wrote"] ? "wrote to the cache" : "wrote nothing (everything it needed was cached)"
        setup = record["setup_ms"] ? ", setup #{record["setup_ms"]} ms" : ""
        out.puts "last boot:  #{time(record["at"])} pid #{record["pid"]} `#{record["program"]}` " \
                 "(#{record["backend"]}, Ruby #{record["ruby"]})#{setup}; #{wrote}"
        rows(record).each do |label, row|
          out.puts format("  %-13s %s%s", label, row.map { |k, v| field(k, v) }.join(" "), hit_rate(row))
        end
      end

      def print_last_writer(loaded)
        return unless loaded

        meta = loaded["meta"]
        counts = { "Ruby" => loaded["iseq"]&.last, "YAML" => loaded["yaml"], "JSON" => loaded["json"] }
        files = counts.filter_map { |name, list| "#{list.size} #{name}" if list }.join(", ")
        out.puts "loaded files: #{files} files through the compile cache, recorded #{time(meta["at"])} by pid " \
                 "#{meta["pid"]} `#{meta["program"]}` (what `loadout check` checks; a boot that writes records " \
                 "its own when they differ)"
      end

      # [[label, { field => value }]]: one row per component, one per compile cache kind.
      def rows(record)
        table = Hash.new { |h, k| h[k] = {} }
        record.each do |name, v|
          next if META.include?(name)

          parts = name.split(".")
          parts.shift if parts.first == "compile_cache" && parts.size > 2
          table[parts.first][parts.drop(1).join(".")] = v
        end
        table.to_a
      end

      # "load_ms=2767.7": durations are recorded in nanoseconds and shown in milliseconds, under
      # the name LOADOUT_STATS gives them.
      def field(name, v)
        if name.end_with?("_ns") && v.is_a?(Integer)
          return format("%s_ms=%.1f", name.delete_suffix("_ns"), v / 1_000_000.0)
        end

        "#{name}=#{v}"
      end

      # "  (hit rate 40.8%: 19 of 45 lookups; 26 fell back to Ruby)"
      def hit_rate(row)
        served = SERVED.sum { |k| row[k].is_a?(Integer) ? row[k] : 0 }
        declined = DECLINED.sum { |k| row[k].is_a?(Integer) ? row[k] : 0 }
        total = served + declined
        return "" if total.zero?

        fallbacks = row["fallbacks"].to_i
        note = fallbacks.positive? ? "; #{fallbacks} fell back to Ruby" : ""
        format("  (hit rate %.1f%%: %d of %d lookups%s)", 100.0 * served / total, served, total, note)
      end

      def time(at)
        at.is_a?(Integer) ? Time.at(at).to_s : "?"
      end
    end
  end
end

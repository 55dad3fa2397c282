# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout stats`, `loadout compact` and `loadout clean`: the commands that look after the
    # store itself. Entries are counted and cleaned per kind and variant, read from the key
    # layouts the components write (CompileCache::Key, LoadPath::Snapshot, Stats::RECORD_KEY):
    #
    #   cc/<i|y|j>/<variant>/<path>     compile cache entry  -> kind iseq|yaml|json, that variant
    #   cc/s/<i|y|j>/<variant>/<path>   its stat record      -> same kind and variant
    #   lp/<idx|ent>/<...>              load path index      -> kind load_path, variant idx|ent
    #   st/<name>                       boot records         -> kind stats
    class StoreCommands # :nodoc:
      COMPILE_KINDS = { "i" => "iseq", "y" => "yaml", "j" => "json" }.freeze
      KIND_PREFIXES = { "lp" => "load_path", "st" => "stats" }.freeze

      # [kind, variant or nil] of a store key.
      def self.classify(key) #: (String) -> [String, String?]
        parts = key.split("/", 5)
        case parts[0]
        when "cc"
          parts.shift
          parts.shift if parts[0] == "s"
          [COMPILE_KINDS.fetch(parts[0].to_s, parts[0].to_s), parts[1]]
        when "st" then ["stats", nil]
        else
          [KIND_PREFIXES.fetch(parts[0], parts[0]), parts.size > 2 ? parts[1] : nil]
        end
      end

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def stats
        _, ctx = @cli.parse(@argv, "stats", "Usage: loadout stats [--cache-dir DIR]\n\n#{COMMANDS["stats"]}")
        return 0 unless ctx
        return missing(ctx) unless ctx.store_exists?

        ctx.with_store do |store|
          out.puts "store:      #{ctx.store_path} (#{human(File.size(ctx.store_path))})"
          store_stats = store.respond_to?(:stats) ? store.stats : {}
          out.puts "records:    #{store_stats.map { |k, v| "#{k}=#{v}" }.join(" ")}" unless store_stats.empty?
          out.puts "entries:    #{store.size} live"
          kinds = entries_by_kind(store)
          kinds.sort.each do |kind, variants|
            total = variants.values.sum
            detail = variants.size > 1 || variants.keys != [nil] ? " (#{variants.map { |v, n| "#{v || "-"}: #{n}" }.join(", ")})" : ""
            out.puts format("  %-9s %d%s", kind, total, detail)
          end
          print_last_boot(Stats.last_boot(store))
        end
        0
      end

      def compact
        _, ctx = @cli.parse(@argv, "compact", "Usage: loadout compact [--cache-dir DIR]\n\n#{COMMANDS["compact"]}")
        return 0 unless ctx
        return missing(ctx) unless ctx.store_exists?

        before = File.size(ctx.store_path)
        eviction = Eviction.new(roots: ctx.config.roots) # the rule automatic sweeps apply (README)
        ctx.with_store(write: true) { |store| store.compact(evict: eviction) }
        after = File.exist?(ctx.store_path) ? File.size(ctx.store_path) : 0
        out.puts "loadout compact: #{ctx.store_path} #{human(before)} -> #{human(after)} " \
                 "(#{eviction.count} entries evicted: sources gone, or unused for #{Eviction::UNUSED_DAYS} days)"
        0
      end

      def clean
        all = false
        kinds = []
        variants = []
        banner = <<~TEXT.chomp
          Usage: loadout clean (--all | --kind KIND | --variant VARIANT) [--cache-dir DIR]

          Deletes cache entries. --kind and --variant may be repeated and combined (an entry goes
          when it matches any given kind and any given variant); `loadout stats` shows the names.
        TEXT
        rest, ctx = @cli.parse(@argv, "clean", banner) do |o|
          o.on("--all", "delete the whole store") { all = true }
          o.on("--kind KIND", "iseq, yaml, json, load_path or stats") { |v| kinds << v }
          o.on("--variant VARIANT", "a variant name as shown by `loadout stats`") { |v| variants << v }
        end
        return 0 unless ctx
        raise UsageError.new("clean: unexpected argument #{rest.first}", ctx.help) unless rest.empty?
        raise UsageError.new("clean: give --all, --kind or --variant", ctx.help) if !all && kinds.empty? && variants.empty?
        raise UsageError.new("clean: --all cannot be combined with --kind/--variant", ctx.help) if all && (kinds.any? || variants.any?)

        return clean_all(ctx) if all
        return missing(ctx) unless ctx.store_exists?

        deleted = 0
        ctx.with_store(write: true) do |store|
          doomed = []
          store.each do |key, *|
            kind, variant = self.class.classify(key)
            next unless (kinds.empty? || kinds.include?(kind)) && (variants.empty? || variants.include?(variant))

            doomed << key
          end
          doomed.each { |key| store.delete(key) }
          deleted = doomed.size
          store.flush
          store.compact if deleted.positive?
        end
        # loadout's own compiled files (SelfCache) are ISeqs too, kept beside the store.
        Dir.glob("#{ctx.store_path}.self-*").each { |f| File.delete(f) } if kinds.include?("iseq") && variants.empty?
        out.puts "loadout clean: deleted #{deleted} entries from #{ctx.store_path}"
        0
      end

      private

      def out
        @cli.out
      end

      def missing(ctx)
        out.puts "loadout: no store at #{ctx.store_path} yet (boot the app or run `loadout precompile`)"
        0
      end

      # Removes only the store's own files, never the directory's other contents: cache_dir may
      # point at a shared directory.
      def clean_all(ctx)
        files = Dir.glob(File.join(Dir.glob(ctx.config.cache_dir).first || ctx.config.cache_dir, "store{,.*}"))
        files.each { |f| File.delete(f) }
        out.puts "loadout clean: removed #{files.size} file#{"s" unless files.size == 1} from #{ctx.config.cache_dir}"
        0
      end

      def entries_by_kind(store)
        kinds = Hash.new { |h, k| h[k] = Hash.new(0) }
        store.each do |key, *|
          kind, variant = self.class.classify(key)
          kinds[kind][variant] += 1
        end
        kinds
      end

      def print_last_boot(record)
        unless record
          out.puts "last boot:  none recorded"
          return
        end

        out.puts "last boot:  #{Time.at(record["at"].to_i)} pid #{record["pid"]} (#{record["backend"]}), setup #{record["setup_ms"]} ms"
        (record["components"] || {}).each do |name, stats|
          flat, nested = stats.partition { |_, v| !v.is_a?(Hash) }
          rows = flat.empty? ? [] : [[name, flat.to_h]]
          rows += nested.map { |kind, sub| [kind, sub.reject { |_, v| v.is_a?(Hash) }] }
          rows.each { |label, row| out.puts format("  %-13s %s%s", label, row.map { |k, v| "#{k}=#{v}" }.join(" "), hit_rate(row)) }
        end
        events = record["events"] || {}
        out.puts "  events:       #{events.map { |k, v| "#{k}=#{v}" }.join(" ")}" unless events.empty?
      end

      # "hit rate 97.0%" when the stats carry hit and miss counters.
      def hit_rate(stats)
        hits = stats.select { |k, v| k.to_s.match?(/\A(hits?|revalidated)\z/) && v.is_a?(Integer) }.values.sum
        misses = stats.select { |k, v| k.to_s.match?(/\A(misses|miss|stale)\z/) && v.is_a?(Integer) }.values.sum
        return "" if (hits + misses).zero?

        format("  (hit rate %.1f%%)", 100.0 * hits / (hits + misses))
      end

      def human(bytes)
        units = %w[B KB MB GB]
        size = bytes.to_f
        unit = units.shift
        while size >= 1024 && !units.empty?
          size /= 1024
          unit = units.shift
        end
        unit == "B" ? "#{bytes} B" : format("%.1f %s", size, unit)
      end
    end
  end
end

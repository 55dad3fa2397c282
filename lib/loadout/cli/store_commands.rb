# frozen_string_literal: true

require_relative "../last_boot"

module Loadout
  class CLI
    # `loadout compact` and `loadout clean`: the commands that look after the store itself (and
    # the key classification `loadout stats` counts entries with). Entries are cleaned per kind
    # and variant, read from the key layouts the components write (CompileCache::Key,
    # LoadPath::Codec, LoadPath::BootRecord, LoadedFiles::KEY):
    #
    #   cc/<i|y|j>/<variant>/<path>     compile cache entry  -> kind iseq|yaml|json, that variant
    #   cc/s/<i|y|j>/<variant>/<path>   its stat record      -> same kind and variant
    #   lp/ent/<dir>, lp/boot          load path listing, boot record -> kind load_path, variant ent or nil
    #   lp/gem/<dir>, lp/app/<dir>     a listing's relocatable copy   -> kind load_path, variant gem or app
    #   st/<name>                       boot records         -> kind stats
    #
    # A cache dir loadout may not write is one message naming it and the fix, exit 1.
    class StoreCommands # :nodoc:
      COMPILE_KINDS = { "i" => "iseq", "y" => "yaml", "j" => "json" }.freeze
      KIND_PREFIXES = { "lp" => "load_path", "st" => "stats" }.freeze
      KINDS = (COMPILE_KINDS.values + KIND_PREFIXES.values).freeze

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

      def compact
        _, ctx = @cli.parse(@argv, "compact", "Usage: loadout compact [--cache-dir DIR]\n\n#{COMMANDS["compact"]}")
        return 0 unless ctx
        return missing(ctx) unless ctx.store_exists?

        before = File.size(ctx.store_path)
        ctx.writable!("compact")
        eviction = Eviction.new(roots: ctx.config.roots) # the rule automatic sweeps apply (README)
        ctx.with_store(write: true) { |store| store.compact(evict: eviction) }
        after = File.exist?(ctx.store_path) ? File.size(ctx.store_path) : 0
        out.puts "loadout compact: #{ctx.store_path} #{self.class.human(before)} -> #{self.class.human(after)} " \
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
          o.on("--kind KIND", "#{KINDS.join(", ")}") { |v| kinds << v }
          o.on("--variant VARIANT", "a variant name as shown by `loadout stats`") { |v| variants << v }
        end
        return 0 unless ctx
        raise UsageError.new("clean: unexpected argument #{rest.first}", ctx.help) unless rest.empty?
        if !all && kinds.empty? && variants.empty?
          raise UsageError.new("clean: give --all, --kind or --variant", ctx.help)
        end
        if all && (kinds.any? || variants.any?)
          raise UsageError.new("clean: --all cannot be combined with --kind/--variant", ctx.help)
        end

        unknown = kinds - KINDS
        unless unknown.empty?
          raise UsageError.new("clean: unknown kind #{unknown.first}; use #{KINDS.join(", ")}", ctx.help)
        end

        return clean_all(ctx) if all
        return missing(ctx) unless ctx.store_exists?

        deleted = 0
        present = {} # variant => true, for the note on a variant no entry has
        ctx.writable!("clean")
        ctx.with_store(write: true) do |store|
          doomed = []
          store.each do |key, *|
            kind, variant = self.class.classify(key)
            present[variant] = true if variant
            next unless (kinds.empty? || kinds.include?(kind)) && (variants.empty? || variants.include?(variant))

            doomed << key
          end
          doomed.each { |key| store.delete(key) }
          deleted = doomed.size
          store.flush
          store.compact if deleted.positive?
        end
        # loadout's own compiled files (SelfCache) are ISeqs too, and the last boot's numbers
        # (LastBoot) a boot record, kept beside the store.
        Dir.glob("#{ctx.store_path}.self-*").each { |f| File.delete(f) } if kinds.include?("iseq") && variants.empty?
        File.delete(LastBoot.path_for(ctx.store_path)) if kinds.include?("stats") && variants.empty? &&
                                                          File.exist?(LastBoot.path_for(ctx.store_path))
        out.puts "loadout clean: deleted #{deleted} entries from #{ctx.store_path}"
        # (A note, not an error: cleaning what is already gone stays a success for scripts.)
        absent = variants.uniq.reject { |v| present.key?(v) }
        unless absent.empty?
          known = present.keys.sort
          @cli.err.puts "loadout clean: no entry has variant #{absent.join(", ")} (the store's: " \
               "#{known.empty? ? "none" : known.join(", ")}; `loadout stats` lists them by kind)"
        end
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
        ctx.writable!("clean") unless files.empty?
        files.each { |f| File.delete(f) }
        out.puts "loadout clean: removed #{files.size} file#{"s" unless files.size == 1} from #{ctx.config.cache_dir}"
        0
      end

      def self.human(bytes) #: (Integer) -> String
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

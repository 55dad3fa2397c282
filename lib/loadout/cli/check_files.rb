# frozen_string_literal: true

require_relative "../loaded_files"

module Loadout
  class CLI
    # The compile cache half of `loadout check`: per kind, what the next boot will do with the
    # files it loads.
    #
    # Which files: by default those the last boot that wrote the cache loaded through it
    # (LoadedFiles), each checked under the exact entry that boot used (its ISeq variant, its
    # YAML/JSON key) and its roots. A warm boot that wrote nothing loaded only cached files, so
    # this is what a boot like it will ask for. With DIRS or --gemfile, or before any boot
    # recorded anything, the files FileSelection picks (what `loadout precompile` compiles).
    #
    # Not counted as misses: files loaded before setup (never served; the next boot loads them
    # the same way), recorded files that are gone (no boot can load them), and, from a walk,
    # YAML/JSON files that do not parse (a boot that loads one raises the same error).
    class CheckFiles # :nodoc:
      MAX_REASONS = 10
      SHOWN_BEFORE = 3 # files named on the "loaded before setup" line
      NOT_COUNTED = %i[gone unloadable].freeze

      attr_reader :unknown

      # +before+: files the load path's boot record says were loaded before setup; +moved+: a
      # Check::Moved (the records' paths as they are here).
      def initialize(out, store, ctx, before, moved = nil)
        @out = out
        @store = store
        @ctx = ctx
        @moved = moved
        @before = {}
        (before || []).each { |path| remember_before(path) }
        @unknown = false
      end

      # Reports every kind of +opts+; returns true when nothing will miss.
      def run(dirs, opts)
        loaded = dirs.empty? && !opts[:gemfile] ? LoadedFiles.load(@store) : nil
        targets = loaded ? from_record(loaded) : from_walk(dirs, opts)
        cache = Boot.component(:CompileCache)
        enabled = @ctx.config.compile_cache & opts[:kinds]
        opts[:kinds].map do |kind|
          list = targets.select { |t| t[:kind] == kind }
          if !enabled.include?(kind)
            @out.puts format("%-11s off", "#{kind}:")
            true
          elsif (why = Boot.unsupported(kind))
            @out.puts format("%-11s off (%s)", "#{kind}:", why)
            true
          elsif !cache.respond_to?(:check)
            @out.puts format("%-11s cannot tell (this build's compile cache has no check); %s", "#{kind}:",
                             files_word(list.size))
            @unknown = true
            true
          else
            check_kind(cache, kind, list, walked: loaded.nil?)
          end
        end.all?
      end

      private

      def from_record(loaded)
        meta = loaded["meta"]
        @roots = @moved&.roots || loaded["roots"]
        move = @moved ? @moved.method(:path) : ->(path) { path }
        before = (meta["before"] || []).map(&move)
        before.each { |path| remember_before(path) }
        @out.puts "files:      those a boot loads through the cache, as recorded #{Time.at(meta["at"].to_i)} by pid " \
                  "#{meta["pid"]} (`#{meta["program"]}`)"
        variant, paths = loaded["iseq"]
        targets = (before + (paths || []).map(&move)).map { |path| { kind: :iseq, path: path, variant: variant } }
        %w[yaml json].each do |kind|
          (loaded[kind] || []).each { |key, path| targets << { kind: kind.to_sym, path: move.call(path), key: key } }
        end
        targets
      end

      def from_walk(dirs, opts)
        root = @ctx.config.root
        bundle = AppBundle.call(root)
        @out.puts "  (#{bundle.error}: gem files are checked under this process's Gem.path)" if bundle.error
        @roots = Config.roots_for(root, bundle.gem_path)
        selection = FileSelection.new(root, bundle, @ctx.config.ignore_directories)
        dirs = dirs.empty? ? [root] : dirs.map { |d| File.expand_path(d) }
        dirs += selection.bundle_roots if opts[:gemfile]
        why = opts[:gemfile] || dirs != [root] ? "as asked" : "no boot has recorded what it loads yet"
        where = dirs.size == 1 ? dirs.first : "#{dirs.size} dirs"
        @out.puts "files:      every file `loadout precompile` would compile under #{where} (#{why})"
        selection.collect(dirs, opts[:kinds], opts[:excludes]).map { |kind, path| { kind: kind, path: path } }
      end

      def check_kind(cache, kind, list, walked:)
        early, list = list.partition { |t| @before.key?(t[:path]) } if kind == :iseq
        results = list.map do |t|
          next [t[:path], :gone, "no longer on disk: no boot can load it"] unless File.file?(t[:path])

          status, reason = cache.check(store: @store, path: t[:path], kind: kind, roots: @roots,
                                       **t.slice(:variant, :key))
          status, reason = unloadable(kind, t[:path]) || [status, reason] if walked && status != :hit && kind != :iseq
          [t[:path], status, reason]
        end
        all_hit = report_kind(kind, results)
        report_before(early.map { |t| t[:path] }) if early && !early.empty?
        all_hit
      end

      # [:unloadable, why] for a YAML/JSON file that does not parse, else nil. YAML is checked
      # for syntax only (nothing is built from it); JSON is read the way the library's own
      # load_file reads it (json 3 reads UTF-8 whatever the locale; 2.x the default external).
      def unloadable(kind, path)
        if kind == :yaml
          require "yaml"
          Psych.parse_file(path)
        else
          require "json"
          JSON.load_file(path)
        end
        nil
      rescue StandardError => e
        [:unloadable, "does not parse (#{e.class}); a boot that loads it raises the same error"]
      end

      def report_kind(kind, results)
        counted, aside = results.partition { |_, status, _| !NOT_COUNTED.include?(status) }
        counts = counted.group_by { |_, status, _| status }.map { |status, l| "#{l.size} #{status}" }.sort
        line = format("%-11s %s: %s", "#{kind}:", files_word(counted.size), counts.empty? ? "none" : counts.join(", "))
        notes = aside.group_by { |_, status, _| status }.map { |status, l| "#{l.size} #{status}" }
        line += "; not counted: #{notes.join(", ")}" unless notes.empty?
        @out.puts line
        misses = counted.reject { |_, status, _| status == :hit }
        (misses + aside).first(MAX_REASONS).each do |path, status, reason|
          @out.puts "  #{status}: #{path}#{" (#{reason})" if reason}"
        end
        @out.puts "  ... #{misses.size + aside.size - MAX_REASONS} more" if misses.size + aside.size > MAX_REASONS
        misses.empty?
      end

      # Files loaded before setup, by path and by realpath (the app may reach them through a
      # symlink the walk does not take, or the other way round).
      def remember_before(path)
        @before[path] = true
        @before[File.realpath(path)] = true
      rescue SystemCallError
        nil
      end

      def report_before(paths)
        named = paths.first(SHOWN_BEFORE).join(", ")
        more = paths.size > SHOWN_BEFORE ? ", #{paths.size - SHOWN_BEFORE} more" : ""
        @out.puts "  loaded before setup (not served by loadout; the next boot loads them the same way): " \
                  "#{files_word(paths.size)} (#{named}#{more})"
      end

      def files_word(count)
        count == 1 ? "1 file" : "#{count} files"
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout check [--gemfile] [DIRS...]`: answers "will the next boot hit?" without booting the
    # app (the Docker-image question). It looks at the store and asks each component, per file,
    # what a boot would do, with reasons. Exit 0 when everything will hit, 2 when something will
    # miss, 3 when a component cannot tell, 1 on a usage error.
    #
    # Components answer through two optional methods (a build without them says "cannot tell"):
    #   LoadPath.check(store:, load_path:, ignore_directories:, trust:, stable_roots:, later:)
    #     -> { status: Symbol, reason: String?, entries: [{ path:, status:, reason: }] }
    #   CompileCache.check(store:, path:, kind:, roots:)        -> [Symbol, String?]
    # where status is :hit, :stale or :missing (:miss for the load path: no index at all). The
    # load path checked is the app's, not this process's (see AppLoadPath).
    #
    # Ruby files the app's boot loads before `require "loadout/setup"` (the main script, its
    # config/boot.rb, Bundler's files: AppLoadPath's +before+) are never served by loadout and
    # are loaded the same way by the next boot: they are reported on a line of their own, not as
    # misses.
    class Check # :nodoc:
      BANNER = <<~TEXT.chomp
        Usage: loadout check [--gemfile] [--no-iseq] [--no-yaml] [--no-json] [DIRS...]

        Tells, without booting the app, whether the next boot will hit the caches: per component,
        with the reasons for every stale or missing entry. DIRS and --gemfile select files like
        `loadout precompile`. The load-path index is checked for the app's $LOAD_PATH: the one its
        last boot recorded in the cache, else what `ruby -rbundler/setup` gives with the app's
        Gemfile (a child process; no app code runs). Exit status: 0 all hit, 2 something will
        miss, 3 a component cannot tell (this build lacks its check), 1 usage error.
      TEXT
      MAX_REASONS = 10
      SHOWN_BEFORE = 3 # files named on the "loaded before setup" line

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        opts = { gemfile: false, excludes: [], kinds: Precompile::KINDS.keys }
        dirs, ctx = @cli.parse(@argv, "check", BANNER) do |o|
          o.on("--gemfile", "also check the gems of the bundle (loads bundler/setup)") { opts[:gemfile] = true }
          o.on("--exclude REGEX", "skip paths matching REGEX (repeatable)") { |v| opts[:excludes] << Regexp.new(v) }
          Precompile::KINDS.each_key { |kind| o.on("--no-#{kind}", "skip #{kind} files") { opts[:kinds] -= [kind] } }
        end
        return 0 unless ctx

        missing = dirs.reject { |d| File.directory?(d) }
        raise UsageError.new("check: not a directory: #{missing.join(", ")}", ctx.help) unless missing.empty?

        out.puts "cache dir:  #{ctx.config.cache_dir}#{" (not writable: boots will not update it)" unless writable?(ctx)}"
        unless ctx.store_exists?
          out.puts "store:      missing (#{ctx.store_path}): the next boot will miss everything"
          out.puts "verdict:    MISS (run `loadout precompile`)"
          return 2
        end

        precompile = Precompile.new(@cli, [])
        precompile.load_bundle if opts[:gemfile]
        roots = dirs.empty? ? [ctx.config.root] : dirs.map { |d| File.expand_path(d) }
        roots += precompile.gem_roots if opts[:gemfile]
        files = precompile.collect(roots, ctx, opts)
        @unknown = false
        @before = {}
        all_hit = true
        ctx.with_store do |store|
          out.puts "store:      #{ctx.store_path} (#{store.size} entries)"
          all_hit &= check_load_path(store, ctx)
          all_hit &= check_compile_cache(store, ctx, files, opts[:kinds])
        end
        verdict(all_hit)
      end

      private

      def verdict(all_hit)
        if !all_hit
          out.puts "verdict:    MISS (see above; `loadout precompile` fills the caches)"
          2
        elsif @unknown
          out.puts "verdict:    UNKNOWN (no misses found, but a component could not tell)"
          3
        else
          out.puts "verdict:    HIT (the next boot will use the caches)"
          0
        end
      end

      def out
        @cli.out
      end

      def writable?(ctx)
        dir = File.directory?(ctx.config.cache_dir) ? ctx.config.cache_dir : File.dirname(ctx.config.cache_dir)
        File.writable?(dir)
      end

      def check_load_path(store, ctx)
        unless ctx.config.load_path_cache
          out.puts "load_path:  off (LOADOUT_DISABLE_LOAD_PATH_CACHE)"
          return true
        end
        if (why = Boot.unsupported(:load_path))
          out.puts "load_path:  off (#{why})"
          return true
        end
        lp = Boot.component(:LoadPath)
        unless lp.respond_to?(:check)
          out.puts "load_path:  cannot tell (this build's load-path index has no check)"
          @unknown = true
          return true
        end

        target = lp::AppLoadPath.for_check(store, ctx.config.root)
        if target.error
          out.puts "load_path:  cannot tell (#{target.error})"
          @unknown = true
          return true
        end

        remember_before(target.before) if target.respond_to?(:before)
        answer = lp.check(store: store, load_path: target.load_path, ignore_directories: ctx.config.ignore_directories,
                          trust: ctx.config.trust, stable_roots: target.stable_roots, later: target.later)
        status = answer[:status]
        out.puts "load_path:  #{status}#{" (#{answer[:reason]})" if answer[:reason]}"
        out.puts "  $LOAD_PATH: #{target.source}" if target.source
        entries = answer[:entries] || []
        # On a miss every entry without a listing is listed: the count in the reason says it.
        entries = entries.reject { |e| e[:status] == :missing } if status == :miss
        entries.first(MAX_REASONS).each { |e| out.puts "  #{e[:status]}: #{e[:path]} (#{e[:reason]})" }
        out.puts "  ... #{entries.size - MAX_REASONS} more" if entries.size > MAX_REASONS
        status == :hit
      end

      def check_compile_cache(store, ctx, files, kinds)
        cache = Boot.component(:CompileCache)
        require "loadout/compile_cache/checker" if cache && !cache.respond_to?(:check)
        enabled = ctx.config.compile_cache & kinds
        all_hit = true
        kinds.each do |kind|
          list = files.select { |k, _| k == kind }.map(&:last)
          if !enabled.include?(kind)
            out.puts format("%-11s off", "#{kind}:")
          elsif (why = Boot.unsupported(kind))
            out.puts format("%-11s off (%s)", "#{kind}:", why)
          elsif !cache.respond_to?(:check)
            out.puts format("%-11s cannot tell (this build's compile cache has no check); %s", "#{kind}:", files_word(list.size))
            @unknown = true
          else
            early, list = list.partition { |path| @before.key?(path) } if kind == :iseq
            all_hit &= report_kind(kind, list.map { |path| [path, *cache.check(store: store, path: path, kind: kind, roots: ctx.config.roots)] })
            report_before(early) if early && !early.empty?
          end
        end
        all_hit
      end

      # Files loaded before setup, by path and by realpath (the app may reach them through a
      # symlink the walk does not take, or the other way round).
      def remember_before(paths)
        (paths || []).each do |path|
          @before[path] = true
          @before[File.realpath(path)] = true
        rescue SystemCallError
          nil
        end
      end

      def report_before(paths)
        named = paths.first(SHOWN_BEFORE).join(", ")
        more = paths.size > SHOWN_BEFORE ? ", #{paths.size - SHOWN_BEFORE} more" : ""
        out.puts "  loaded before setup (not served by loadout; the next boot loads them the same way): " \
                 "#{files_word(paths.size)} (#{named}#{more})"
      end

      def files_word(count)
        count == 1 ? "1 file" : "#{count} files"
      end

      def report_kind(kind, results)
        by_status = results.group_by { |_, status, _| status }
        counts = by_status.map { |status, list| "#{list.size} #{status}" }.sort
        out.puts format("%-11s %s: %s", "#{kind}:", files_word(results.size), counts.empty? ? "none" : counts.join(", "))
        misses = results.reject { |_, status, _| status == :hit }
        misses.first(MAX_REASONS).each { |path, status, reason| out.puts "  #{status}: #{path}#{" (#{reason})" if reason}" }
        out.puts "  ... #{misses.size - MAX_REASONS} more" if misses.size > MAX_REASONS
        misses.empty?
      end
    end
  end
end

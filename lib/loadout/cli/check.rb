# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout check [--gemfile] [DIRS...]`: answers "will the next boot hit?" without booting the
    # app (the Docker-image question), for the load path index (LoadPath.check, for the app's
    # $LOAD_PATH: see AppLoadPath) and the compile cache (CheckFiles: the files the last boot that
    # wrote the cache loaded, or with DIRS/--gemfile the files precompile selects). Exit 0 when
    # everything will hit, 2 when something will miss, 3 when a component cannot tell, 1 on a
    # usage error. So `loadout precompile && loadout check` can gate an image build.
    #
    # Components answer through two optional methods (a build without them says "cannot tell"):
    #   LoadPath.check(store:, load_path:, ignore_directories:, trust:, stable_roots:, later:)
    #     -> { status: Symbol, reason: String?, entries: [{ path:, status:, reason: }] }
    #   CompileCache.check(store:, path:, kind:, roots:, variant: nil, key: nil) -> [Symbol, String?]
    # where status is :hit, :stale or :missing (:miss for the load path: no index at all).
    class Check # :nodoc:
      BANNER = <<~TEXT.chomp
        Usage: loadout check [--gemfile] [--no-iseq] [--no-yaml] [--no-json] [DIRS...]

        Tells, without booting the app, whether the next boot will hit the caches: per component,
        with the reasons for every stale or missing entry. The compile cache is checked for the
        files the last boot that wrote the cache loaded (with the exact entries it used); before
        any boot, or with DIRS / --gemfile, for the files `loadout precompile` selects. The
        load-path index is checked for the app's $LOAD_PATH: the one its last boot recorded in the
        cache, else what `ruby -rbundler/setup` gives with the app's Gemfile (a child process; no
        app code runs). Each `loadout prelude` directory on RUBYLIB is checked for this Ruby's image.
        Exit status: 0 all hit, 2 something will miss, 3 a component cannot tell (this build lacks
        its check), 1 usage error.
      TEXT
      MAX_REASONS = 10

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        opts = { gemfile: false, excludes: [], kinds: FileSelection::KINDS.keys }
        dirs, ctx = @cli.parse(@argv, "check", BANNER) do |o|
          o.on("--gemfile", "also check the bundle's gems (their load path dirs)") { opts[:gemfile] = true }
          o.on("--exclude REGEX", "skip paths matching REGEX (repeatable)") do |v|
            opts[:excludes] << FileSelection.exclude(v)
          end
          FileSelection::KINDS.each_key { |kind| o.on("--no-#{kind}", "skip #{kind} files") { opts[:kinds] -= [kind] } }
        end
        return 0 unless ctx

        missing = dirs.reject { |d| File.directory?(d) }
        raise UsageError.new("check: not a directory: #{missing.join(", ")}", ctx.help) unless missing.empty?

        note = if ctx.config.readonly then " (read-only: boots will not update it)"
               elsif writable?(ctx) then ""
               else " (not writable: boots will not update it)"
               end
        out.puts "cache dir:  #{ctx.config.cache_dir}#{note}"
        unless ctx.store_exists?
          out.puts "store:      missing (#{ctx.store_path}): the next boot will miss everything"
          out.puts "verdict:    MISS (run `loadout precompile`)"
          return 2
        end

        @unknown = false
        @before = []
        all_hit = true
        unusable = nil
        ctx.with_store do |store|
          # (A newer loadout's store is refused when the command opens it: an error, exit 1.)
          kind, what, fix = store.problem
          if kind == :foreign # (boots read nothing from it and write nothing to it: each is a cold boot)
            unusable = true
            out.puts "store:      #{ctx.store_path}: #{what}; boots neither read nor write it (#{fix}, or " \
                     "`loadout clean --all`)"
            next
          end
          out.puts "store:      #{ctx.store_path} (#{store.size} entries)"
          @moved = Moved.new(LoadedFiles.load(store), ctx.config.root)
          out.puts "  #{@moved.note}" if @moved.note
          all_hit &= check_load_path(store, ctx)
          files = CheckFiles.new(out, store, ctx, @before, @moved)
          all_hit &= files.run(dirs, opts)
          @unknown ||= files.unknown
        end
        if unusable
          out.puts "verdict:    MISS (the store is unusable: the next boot will miss everything)"
          return 2
        end
        all_hit &= check_prelude
        verdict(all_hit)
      end

      # The prelude directories on RUBYLIB (loadout prelude): what this Ruby's processes get there.
      def check_prelude
        return true unless RUBY_ENGINE == "ruby"

        PreludeCommand.check(@cli.env["RUBYLIB"]).map do |dir, status, detail|
          line = case status
                 when :hit then "#{detail} files for Ruby #{RUBY_VERSION}, each as it was compiled"
                 when :stale then "#{detail[0]} of #{detail[1]} files changed since `loadout prelude` (Ruby " \
                                  "compiles them): run it again"
                 when :no_image then "no image for Ruby #{RUBY_VERSION} (Ruby compiles RubyGems' files): run " \
                                     "`loadout prelude` with this Ruby"
                 when :other_shim then "its rubygems.rb is another loadout's: run `loadout prelude` again"
                 else "its image is not used (#{detail}): run `loadout prelude` again"
                 end
          out.puts "prelude:    #{dir} (on RUBYLIB): #{line}"
          status == :hit
        end.all?
      end

      # The records a boot left (what it loaded, its $LOAD_PATH) name paths where that boot ran. A
      # cache built with the app at one path and checked with it at another (a build stage, a CI
      # job's workspace) is checked for the files here: each recorded root is mapped to the root
      # with the same tag here (CompileCache::Key's tags: "~" for the app, a gem home's name).
      class Moved # :nodoc:
        attr_reader :pairs, :roots, :note

        # +loaded+: LoadedFiles.load's record (nil: none); +root+: the app root here.
        def initialize(loaded, root)
          @pairs = []
          @roots = nil
          @note = nil
          recorded = loaded && loaded["roots"]
          return if recorded.nil? || recorded.first == root

          bundle = AppBundle.call(root)
          @roots = Config.roots_for(root, bundle.gem_path)
          require_relative "../compile_cache/key"
          @pairs = LoadedFiles.relocation(loaded["tags"], CompileCache::Key.new(@roots).root_tags)
          unless @pairs.empty?
            @note = "(recorded with the app at #{recorded.first}: its files are checked here, under #{root})"
          end
        end

        def path(path)
          LoadedFiles.relocate(path, @pairs)
        end

        def paths(list)
          @pairs.empty? ? list : list.map { |p| path(p) }
        end
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

      # Whether a boot can write the cache dir: a missing one is made by the boot (Trust.cache_dir:
      # mkdir -p), so what counts is the nearest directory that exists on the way to it.
      def writable?(ctx)
        dir = ctx.config.cache_dir
        dir = File.dirname(dir) until File.exist?(dir) || File.dirname(dir) == dir
        File.directory?(dir) && File.writable?(dir)
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

        @before = @moved.paths(target.before || []) if target.respond_to?(:before)
        answer = lp.check(store: store, load_path: target.load_path, ignore_directories: ctx.config.ignore_directories,
                          trust: ctx.config.trust, stable_roots: target.stable_roots, later: @moved.paths(target.later),
                          root: ctx.config.root)
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
    end
  end
end

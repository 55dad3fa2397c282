# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout precompile [--gemfile] [-j N] [DIRS...]`: compiles every Ruby, YAML and JSON file
    # under DIRS (default: the app root) and, with --gemfile, under the bundle's gems into the
    # compile cache, in N worker processes; then builds the load-path index for the app's
    # $LOAD_PATH (not this process's), so a baked image (Docker, CI cache) hits on its first boot.
    class Precompile # :nodoc:
      KINDS = {
        iseq: [".rb", ".rake", "Rakefile"],
        yaml: [".yml", ".yaml"],
        json: [".json"]
      }.freeze
      # Never worth compiling: VCS data, caches, logs, front-end dependencies.
      SKIP_DIRS = %w[.git tmp log node_modules coverage].freeze
      # Inline below this many files: a worker process costs more than it saves.
      INLINE_BELOW = 64

      BANNER = <<~TEXT.chomp
        Usage: loadout precompile [--gemfile] [-j N] [--exclude REGEX] [--no-iseq] [--no-yaml] [--no-json] [DIRS...]

        Fills the compile caches for DIRS (default: the app root) and, with --gemfile, for every gem
        of the bundle; then builds the load-path index for the app's $LOAD_PATH. Run it in the
        image build after `bundle install` (`bundle exec loadout precompile --gemfile`), then check
        the result with `loadout check`.
      TEXT

      def self.worker(cli, argv)
        kinds = nil
        _rest, ctx = cli.parse(argv[0...-1], "__worker", "internal") { |o| o.on("--kinds LIST") { |v| kinds = v } }
        files = File.read(argv.last).split("\0")
        new(cli, []).compile_files(ctx, files, kinds.to_s.split(",").map(&:to_sym)) { |line| cli.out.puts line; cli.out.flush }
        0
      end

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        opts = { gemfile: false, jobs: nil, excludes: [], kinds: KINDS.keys }
        dirs, ctx = @cli.parse(@argv, "precompile", BANNER) do |o|
          o.on("--gemfile", "also compile the gems of the bundle (loads bundler/setup)") { opts[:gemfile] = true }
          o.on("-j", "--jobs N", Integer, "worker processes (default: CPUs allowed by cgroup limits; 0 or 1: inline)") do |n|
            raise OptionParser::InvalidArgument, "--jobs #{n}: must be 0 or more" if n.negative?

            opts[:jobs] = n
          end
          o.on("--exclude REGEX", "skip paths matching REGEX (repeatable)") { |v| opts[:excludes] << Regexp.new(v) }
          KINDS.each_key do |kind|
            o.on("--no-#{kind}", "skip #{kind} files") { opts[:kinds] -= [kind] }
          end
        end
        return 0 unless ctx

        missing = dirs.reject { |d| File.directory?(d) }
        raise UsageError.new("precompile: not a directory: #{missing.join(", ")}", ctx.help) unless missing.empty?

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        # Kinds this Ruby cannot cache (the ISeq cache off CRuby) are left out, as a boot leaves them.
        @off = opts[:kinds].filter_map { |kind| (why = Boot.unsupported(kind)) && [kind, why] }.to_h
        opts[:kinds] -= @off.keys
        load_bundle if opts[:gemfile]
        roots = dirs.empty? ? [ctx.config.root] : dirs.map { |d| File.expand_path(d) }
        roots += gem_roots if opts[:gemfile]
        files = collect(roots, ctx, opts)
        failures = compile(ctx, files, opts)
        index = build_index(ctx)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        summary(files, failures, index, seconds)
        failures.empty? ? 0 : 1
      end

      # Compiles +files+ ([[kind, path]]) in this process; yields one progress line per file.
      def compile_files(ctx, files, kinds)
        cache = Boot.component(:CompileCache)
        unless cache
          files.each { |path| yield "skip\t#{path}\tcompile cache not available in this build" }
          return
        end

        ctx.with_store(write: true) do |store|
          flags = KINDS.keys.to_h { |k| [k, kinds.include?(k)] }
          begin
            cache.install!(store: store, **flags, **precompile_options(cache), readonly: false,
                           trust: ctx.config.compile_cache_trust, roots: ctx.config.roots)
          rescue StandardError, LoadError => e
            cache.uninstall! rescue nil # a half-done install must not keep hooks on a closed store
            files.each { |path| yield "skip\t#{path}\tcompile cache failed to install: #{e.class}: #{e.message}" }
            return
          end
          begin
            files.each do |path|
              compile_one(cache, path)
              yield "ok\t#{path}"
            rescue StandardError, ScriptError => e
              yield "fail\t#{path}\t#{e.class}: #{e.message.lines.first&.chomp}"
            end
            drain_misses(cache)
            store.flush
          ensure
            cache.uninstall!
          end
        end
      end

      def out
        @cli.out
      end

      # Compile now, in this process: a background or at-exit compile would outlive the worker's
      # point (CompileCache's miss_compile option, when it has one).
      def precompile_options(cache)
        params = cache.method(:install!).parameters.map(&:last)
        params.include?(:miss_compile) ? { miss_compile: :exit } : {}
      end

      def err
        @cli.err
      end

      # Puts the bundle's gems on $LOAD_PATH (a no-op under `bundle exec`). Bundler finds the
      # Gemfile the same way Setup found the app root (BUNDLE_GEMFILE, else upwards from here).
      def load_bundle
        require "bundler/setup"
      end

      # The roots of the bundle's gems: each $LOAD_PATH entry inside a gem home, up to the gem's
      # directory (its lib/ and, for engines, app/).
      def gem_roots
        homes = Gem.path.map { |g| File.expand_path(g) }
        homes << File.expand_path(Bundler.bundle_path.to_s) if defined?(Bundler) && Bundler.respond_to?(:bundle_path)
        $LOAD_PATH.map { |lp| File.expand_path(lp.to_s) }.select do |lp|
          homes.any? { |home| lp.start_with?("#{home}/") } && File.directory?(lp)
        end.flat_map do |lp|
          app = File.join(File.dirname(lp), "app")
          lp.end_with?("/lib") && File.directory?(app) ? [lp, app] : [lp]
        end.uniq
      end

      # [[kind, abspath]] for every file under +roots+ the enabled kinds cover (also used by check).
      def collect(roots, ctx, opts)
        exts = opts[:kinds].flat_map { |k| KINDS[k] }
        ignore = (SKIP_DIRS + ctx.config.ignore_directories).uniq
        seen = {}
        roots.each do |root|
          result = Scan.call(root, extensions: exts.select { |e| e.start_with?(".") }, ignore: ignore)
          paths = result.files.map { |rel| File.join(root, rel) }
          paths += exts.reject { |e| e.start_with?(".") }.map { |name| File.join(root, name) }.select { |p| File.file?(p) }
          paths.each do |path|
            next if opts[:excludes].any? { |re| re.match?(path) }

            seen[path] ||= kind_of(path)
          end
        end
        seen.map { |path, kind| [kind, path] }.select { |kind, _| opts[:kinds].include?(kind) }
      end

      private

      def kind_of(path)
        KINDS.find { |_, exts| exts.any? { |e| path.end_with?(e) } }&.first
      end

      def jobs_for(opts, count)
        jobs = opts[:jobs] || WorkerPool.cpu_count
        jobs = 1 if count < INLINE_BELOW && opts[:jobs].nil?
        [[jobs, 1].max, [count, 1].max].min
      end

      # Returns the failure lines.
      def compile(ctx, files, opts)
        failures = []
        return failures if files.empty?

        progress = Progress.new(err, files.size)
        handle = lambda do |line|
          status, path, why = line.split("\t", 3)
          failures << "#{path}: #{why}" if status == "fail"
          @skipped = why if status == "skip"
          progress.step
        end
        jobs = jobs_for(opts, files.size)
        if jobs <= 1
          compile_files(ctx, files.map(&:last), opts[:kinds], &handle)
        else
          args = ["--cache-dir", ctx.config.cache_dir, "--kinds", opts[:kinds].join(",")]
          crashed = WorkerPool.run(files.map(&:last), jobs, args, &handle)
          failures << "#{crashed} worker process(es) exited with an error" if crashed.positive?
        end
        @jobs = jobs
        progress.finish
        failures
      end

      # Builds and persists the load-path index for the app's $LOAD_PATH (the last boot's, and
      # the bundle's as a child `ruby -rbundler/setup` sees it: see LoadPath::AppLoadPath), not
      # for this process's, plus the listings of dirs the app adds after boot. Returns a short
      # description for the summary line.
      def build_index(ctx)
        return "load-path index off" unless ctx.config.load_path_cache
        if (why = Boot.unsupported(:load_path))
          return "load-path index off (#{why})"
        end

        lp = Boot.component(:LoadPath) or return "load-path index not available in this build"
        return "load-path index not built (this build's load-path index has no precompile)" unless lp.respond_to?(:precompile)

        opts = { ignore_directories: ctx.config.ignore_directories, trust: ctx.config.trust }
        ctx.with_store(write: true) do |store|
          targets, extra, notes = lp::AppLoadPath.for_precompile(store, ctx.config.root)
          notes.each { |n| err.puts "loadout precompile: #{n}" }
          return "load-path index not built (#{notes.last})" if targets.empty?

          # The last call also lists the dirs a boot adds later (it knows the app's stable roots).
          built = targets.each_with_index.map do |t, i|
            lp.precompile(store: store, load_path: t.load_path, stable_roots: t.stable_roots,
                          extra: i == targets.size - 1 ? extra : [], **opts)
          end
          store.flush
          sizes = targets.map { |t| t.load_path.size }.join(" + ")
          fresh = built.count { |b| !b[:restored] }
          "load-path index for the app's $LOAD_PATH (#{sizes} items: #{fresh} built, #{targets.size - fresh} " \
            "already stored; #{built.sum { |b| b[:listed] }} dirs listed, #{extra.size} added-later dirs covered)"
        end
      end

      def summary(files, failures, index, seconds)
        counts = KINDS.keys.filter_map { |kind| (n = files.count { |k, _| k == kind }).positive? && "#{kind} #{n}" }
        line = format("loadout precompile: %d files (%s) in %.1f s with %d worker%s; %d failed; %s",
                      files.size, counts.join(", "), seconds, @jobs || 1, @jobs == 1 ? "" : "s", failures.size, index)
        line += "; compile cache skipped (#{@skipped})" if @skipped
        @off.to_h.each { |kind, why| line += "; #{kind} off (#{why})" }
        out.puts line
        failures.first(20).each { |f| err.puts "  failed: #{f}" }
        err.puts "  ... #{failures.size - 20} more" if failures.size > 20
      end

      # The compile cache defers writing misses to exit (so a first boot costs what plain Ruby
      # costs); precompile wants them written now, while the store is open.
      def drain_misses(cache)
        writer = cache.respond_to?(:context) && cache.context.respond_to?(:writer) && cache.context.writer
        writer.run if writer.respond_to?(:run)
      end

      def compile_one(cache, path)
        if cache.respond_to?(:precompile)
          cache.precompile(path)
          return
        end

        case kind_of(path)
        when :iseq
          # RubyVM is CRuby's (run has left :iseq out elsewhere); a worker asked anyway does nothing.
          RubyVM::InstructionSequence.load_iseq(path) if defined?(RubyVM::InstructionSequence.load_iseq)
        when :yaml
          require "yaml"
          # The YAML cache keys by method: fill both an app may call. load_file (safe in Psych 4)
          # may refuse a file unsafe_load_file reads; only a file neither can read is a failure.
          unless YAML.respond_to?(:unsafe_load_file)
            YAML.load_file(path)
            return
          end
          begin
            YAML.load_file(path)
          rescue Psych::DisallowedClass, Psych::BadAlias
            nil
          end
          YAML.unsafe_load_file(path)
        when :json
          require "json"
          JSON.load_file(path)
        end
      end
    end
  end
end

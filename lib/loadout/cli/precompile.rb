# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout precompile [--gemfile] [-j N] [DIRS...]`: compiles every Ruby, YAML and JSON file
    # under DIRS (default: the app root, without its vendored bundle) and, with --gemfile, under
    # the bundle's gems into the compile cache, in N worker processes; then builds the load-path
    # index for the app's $LOAD_PATH (not this process's), so a baked image (Docker, CI cache)
    # hits on its first boot. Keys are made with the app's Gem.path (see AppBundle).
    #
    # Each worker prints one line per file: "ok", "bad" (the file does not load: a YAML or JSON
    # syntax error, an unreadable file; a boot that loads it raises the same error with or
    # without loadout, so it is reported as skipped, not as a failure), or "skip" (no compile
    # cache in this build). Exit 1 only for loadout's own failures: an unusable cache dir, a
    # worker that died.
    class Precompile # :nodoc:
      KINDS = FileSelection::KINDS
      # Inline below this many files: a worker process costs more than it saves.
      INLINE_BELOW = 64
      SHOWN = 20 # skipped or failed files named in the summary

      BANNER = <<~TEXT.chomp
        Usage: loadout precompile [--gemfile] [-j N] [--exclude REGEX] [--no-iseq] [--no-yaml] [--no-json] [DIRS...]

        Fills the compile caches for DIRS (default: the app root) and, with --gemfile, for every gem
        of the bundle; then builds the load-path index for the app's $LOAD_PATH. Run it in the
        image build after `bundle install` (`bundle exec loadout precompile --gemfile`), then check
        the result with `loadout check`.
      TEXT

      # `loadout __worker --kinds iseq,yaml --roots A:B LISTFILE`: one worker process.
      def self.worker(cli, argv)
        kinds = nil
        roots = nil
        _rest, ctx = cli.parse(argv[0...-1], "__worker", "internal") do |o|
          o.on("--kinds LIST") { |v| kinds = v }
          o.on("--roots LIST") { |v| roots = v.split(File::PATH_SEPARATOR) }
        end
        # Written in binary by WorkerPool; tagged back as the file system's, like Scan's paths.
        files = File.binread(argv.last).force_encoding(Encoding.find("filesystem")).split("\0")
        precompile = new(cli, [])
        precompile.roots = roots
        precompile.compile_files(ctx, files, kinds.to_s.split(",").map(&:to_sym)) do |line|
          cli.out.puts line
          cli.out.flush
        end
        0
      end

      # The compile cache's roots as the app's boot computes them.
      attr_writer :roots

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        opts = { gemfile: false, jobs: nil, excludes: [], kinds: KINDS.keys }
        dirs, ctx = @cli.parse(@argv, "precompile", BANNER) do |o|
          o.on("--gemfile", "also compile the bundle's gems (their load path dirs)") { opts[:gemfile] = true }
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
        ctx.writable!("precompile")
        # Kinds this Ruby cannot cache (the ISeq cache off CRuby) are left out, as a boot leaves them.
        @off = opts[:kinds].filter_map { |kind| (why = Boot.unsupported(kind)) && [kind, why] }.to_h
        opts[:kinds] -= @off.keys
        bundle = AppBundle.call(ctx.config.root)
        err.puts "loadout precompile: #{bundle.error}; gem files are keyed with this process's Gem.path" if bundle.error
        @roots = Config.roots_for(ctx.config.root, bundle.gem_path)
        selection = FileSelection.new(ctx.config.root, bundle, ctx.config.ignore_directories)
        dirs = dirs.empty? ? [ctx.config.root] : dirs.map { |d| File.expand_path(d) }
        dirs += selection.gem_roots if opts[:gemfile]
        files = selection.collect(dirs, opts[:kinds], opts[:excludes])
        failures, bad = compile(ctx, files, opts)
        index = build_index(ctx)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        summary(files, failures, bad, index, seconds)
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
                           trust: ctx.config.compile_cache_trust, roots: @roots || ctx.config.roots)
          rescue StandardError, LoadError => e
            cache.uninstall! rescue nil # a half-done install must not keep hooks on a closed store
            files.each { |path| yield "skip\t#{path}\tcompile cache failed to install: #{e.class}: #{e.message}" }
            return
          end
          begin
            files.each do |path|
              compile_one(cache, path)
              yield "ok\t#{path}"
            rescue StandardError, ScriptError => e # the file's own error: see the class comment
              yield "bad\t#{path}\t#{e.class}: #{e.message.lines.first&.chomp&.delete_prefix("(#{path}): ")}"
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

      private

      def jobs_for(opts, count)
        jobs = opts[:jobs] || WorkerPool.cpu_count
        jobs = 1 if count < INLINE_BELOW && opts[:jobs].nil?
        [[jobs, 1].max, [count, 1].max].min
      end

      # Returns [failures, bad files] (lines naming the file and the reason).
      def compile(ctx, files, opts)
        failures = []
        bad = []
        return [failures, bad] if files.empty?

        progress = Progress.new(err, files.size)
        handle = lambda do |line|
          status, path, why = line.split("\t", 3)
          bad << "#{path}: #{why}" if status == "bad"
          @skipped = why if status == "skip"
          progress.step
        end
        jobs = jobs_for(opts, files.size)
        if jobs <= 1
          compile_files(ctx, files.map(&:last), opts[:kinds], &handle)
        else
          args = ["--cache-dir", ctx.config.cache_dir, "--kinds", opts[:kinds].join(","),
                  "--roots", @roots.join(File::PATH_SEPARATOR)]
          crashed = WorkerPool.run(files.map(&:last), jobs, args, &handle)
          failures << "#{crashed} worker process(es) exited with an error" if crashed.positive?
        end
        @jobs = jobs
        progress.finish
        [failures, bad]
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

      def summary(files, failures, bad, index, seconds)
        counts = KINDS.keys.filter_map { |kind| (n = files.count { |k, _| k == kind }).positive? && "#{kind} #{n}" }
        workers = @jobs || 1
        line = format("loadout precompile: %d files (%s) in %.1f s with %d worker%s; %d skipped (do not load); " \
                      "%d failed; %s", files.size, counts.join(", "), seconds, workers, workers == 1 ? "" : "s",
                      bad.size, failures.size, index)
        line += "; compile cache skipped (#{@skipped})" if @skipped
        @off.to_h.each { |kind, why| line += "; #{kind} off (#{why})" }
        out.puts line
        unless bad.empty?
          out.puts "  skipped: these files do not load (a boot that loads one raises the same error, with or " \
                   "without loadout):"
          bad.first(SHOWN).each { |f| out.puts "    #{f}" }
          out.puts "    ... #{bad.size - SHOWN} more" if bad.size > SHOWN
        end
        failures.first(SHOWN).each { |f| err.puts "  failed: #{f}" }
        err.puts "  ... #{failures.size - SHOWN} more" if failures.size > SHOWN
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

        case FileSelection.kind_of(path)
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

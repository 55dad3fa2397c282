# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout precompile [--gemfile] [-j N] [DIRS...]`: compiles every Ruby, YAML and JSON file
    # under DIRS (default: the app root, without its vendored bundle) and, with --gemfile, under
    # the bundle's gems into the compile cache, in N worker processes; then builds the load-path
    # index for the app's $LOAD_PATH (not this process's), so a baked image (Docker, CI cache)
    # hits on its first boot. Keys are made with the app's Gem.path (see AppBundle).
    #
    # This class is the command: options, the file list (FileSelection), inline or WorkerPool,
    # the summary. The compiling itself is PrecompileFiles (each worker's body, and an inline
    # run's); the load-path index is PrecompileIndex. Each worker prints one line per file (see
    # PrecompileFiles): "ok", "bad" (the file does not load; reported as skipped, not as a
    # failure) or "skip" (no compile cache in this build). Exit 1 only for loadout's own
    # failures: an unusable cache dir, a worker that died.
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
        index = PrecompileIndex.build(ctx, err)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        summary(files, failures, bad, index, seconds)
        failures.empty? ? 0 : 1
      end

      def out
        @cli.out
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
          PrecompileFiles.new(@roots).compile(ctx, files.map(&:last), opts[:kinds], &handle)
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
    end
  end
end

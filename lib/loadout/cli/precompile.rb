# frozen_string_literal: true

module Loadout
  class CLI
    # `loadout precompile [--gemfile] [-j N] [DIRS...] [-- COMMAND...]`: fills the cache a baked
    # image or a CI cache carries, so that the next boot hits everything:
    #
    # 1. with a COMMAND (the recommended form), PrecompileBoot runs the app's own boot once with
    #    this cache: everything that boot loads is stored as the boot loads it (Ruby's standard
    #    library and loadout's own files, YAML/JSON values under the app's call shapes, locale
    #    files outside require paths), and recorded for `loadout check`;
    # 2. the directory walk, for what a boot does not reach: every Ruby, YAML and JSON file under
    #    DIRS (default: the app root, without its vendored bundle) and, with --gemfile, under the
    #    bundle's other $LOAD_PATH dirs and its gems' data dirs (FileSelection), compiled in N
    #    worker processes (YAML/JSON loaded with every call shape the app's boots recorded and the
    #    common ones);
    # 3. loadout's own files for the self cache, when no boot wrote it;
    # 4. the load-path index for the app's $LOAD_PATH (PrecompileIndex: the recorded one, not this
    #    process's).
    #
    # Keys are made with the app's Gem.path (see AppBundle). Each worker prints one line per file
    # (see PrecompileFiles): "ok", "bad" (the file does not load; reported as skipped, not as a
    # failure) or "skip" (no compile cache in this build). Exit 1 for loadout's own failures (an
    # unusable cache dir, a worker that died) and when the boot COMMAND failed or did not set
    # loadout up; the rest of the work is done anyway.
    class Precompile # :nodoc:
      KINDS = FileSelection::KINDS
      # Inline below this many files: a worker process costs more than it saves.
      INLINE_BELOW = 64
      SHOWN = 20 # skipped or failed files named in the summary

      BANNER = <<~TEXT.chomp
        Usage: loadout precompile [--gemfile] [-j N] [--exclude REGEX] [--no-iseq] [--no-yaml] [--no-json] [DIRS...] [-- COMMAND...]

        Fills the caches so that the next boot hits everything. With COMMAND, boots the app once
        with this cache first (run it as the app runs, e.g. `-- bin/rails runner 1` with
        RAILS_ENV=production: everything that boot loads is stored, exactly as it loads it). Then
        compiles every Ruby, YAML and JSON file under DIRS (default: the app root) and, with
        --gemfile, under the rest of the bundle's $LOAD_PATH (its gems and Ruby's own library) and
        the gems' data dirs; then builds the load-path index for the app's $LOAD_PATH. In an image
        build, after `bundle install`:
          bundle exec loadout precompile --gemfile -- bin/rails runner 1
        then `loadout check` tells whether the next boot will hit.
      TEXT

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        opts = { gemfile: false, jobs: nil, excludes: [], kinds: KINDS.keys }
        split = @argv.index("--")
        argv = split ? @argv[0...split] : @argv
        command = split ? @argv[(split + 1)..] : nil
        dirs, ctx = @cli.parse(argv, "precompile", BANNER) do |o|
          o.on("--gemfile", "also compile the rest of the bundle's $LOAD_PATH (gems, Ruby's own library) and the " \
                            "gems' data dirs") { opts[:gemfile] = true }
          o.on("-j", "--jobs N", Integer,
               "worker processes (default: CPUs allowed by cgroup limits; 0 or 1: inline)") do |n|
            raise OptionParser::InvalidArgument, "--jobs #{n}: must be 0 or more" if n.negative?

            opts[:jobs] = n
          end
          o.on("--exclude REGEX", "skip paths matching REGEX (repeatable)") do |v|
            opts[:excludes] << FileSelection.exclude(v)
          end
          KINDS.each_key do |kind|
            o.on("--no-#{kind}", "skip #{kind} files") { opts[:kinds] -= [kind] }
          end
        end
        return 0 unless ctx
        raise UsageError.new("precompile: no command after --", ctx.help) if command&.empty?

        missing = dirs.reject { |d| File.directory?(d) }
        raise UsageError.new("precompile: not a directory: #{missing.join(", ")}", ctx.help) unless missing.empty?

        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        ctx.writable!("precompile")
        boot = command && PrecompileBoot.run(ctx, command, err, @cli.env)
        # Issue #21 (the app's own GC settings): the boot's LastBoot record (boot.record) holds
        # the numbers that boot ended with; the RUBY_GC_* settings an image should carry are to be
        # derived from it and printed here, so one build step gives the image both.
        # Kinds this Ruby cannot cache (the ISeq cache off CRuby) are left out, as a boot leaves them.
        @off = opts[:kinds].filter_map { |kind| (why = Boot.unsupported(kind)) && [kind, why] }.to_h
        opts[:kinds] -= @off.keys
        bundle = AppBundle.call(ctx.config.root)
        err.puts "loadout precompile: #{bundle.error}; gem files are keyed with this process's Gem.path" if bundle.error
        @roots = Config.roots_for(ctx.config.root, bundle.gem_path)
        selection = FileSelection.new(ctx.config.root, bundle, ctx.config.ignore_directories)
        dirs = dirs.empty? ? [ctx.config.root] : dirs.map { |d| File.expand_path(d) }
        dirs += selection.bundle_roots if opts[:gemfile]
        files = selection.collect(dirs, opts[:kinds], opts[:excludes])
        failures, bad = compile(ctx, files, opts)
        self_cache = SelfFiles.fill(ctx) if opts[:kinds].include?(:iseq)
        index = PrecompileIndex.build(ctx, err)
        compact(ctx)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        failures << boot_failure(boot) if boot && !boot.success?
        summary(files, failures, bad, index, seconds, boot, self_cache)
        hint(ctx) unless command
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

      # The store as `loadout compact` leaves it: what the boot and the walk replaced is gone, and
      # the size its header records is the size now, so the image's first boots (a fleet's
      # workers appending stat records) do not each find it "grown by half" and sweep it.
      def compact(ctx)
        eviction = Eviction.new(roots: @roots)
        ctx.with_store(write: true) { |store| store.compact(evict: eviction) }
      end

      # Without a boot, what the app loads from outside the walked dirs, and YAML/JSON read with a
      # call shape no boot recorded, misses once: say how to get a fully warm next boot.
      def hint(ctx)
        rails = %w[bin/rails config/application.rb].all? { |f| File.file?(File.join(ctx.config.root, f)) }
        example = rails ? "bin/rails runner 1 (with RAILS_ENV set as the app runs)" : "the command that boots the app"
        err.puts "loadout precompile: no boot was run; for a fully warm next boot give the app's boot after --, " \
                 "e.g. `loadout precompile --gemfile -- #{example}`"
      end

      def boot_failure(boot)
        if boot.record.nil?
          "`#{boot.command.join(" ")}` did not set loadout up with this cache (nothing was recorded in " \
            "LOADOUT_CACHE_DIR): its boot must `require \"loadout/setup\"` (config/boot.rb)" \
            "#{" and exited with #{boot.status.exitstatus}" if boot.status && !boot.status.success?}"
        else
          "`#{boot.command.join(" ")}` exited with status #{boot.status&.exitstatus || "?"} " \
            "(its output is above); the cache holds what it loaded before it failed"
        end
      end

      def summary(files, failures, bad, index, seconds, boot, self_cache)
        counts = KINDS.keys.filter_map { |kind| (n = files.count { |k, _| k == kind }).positive? && "#{kind} #{n}" }
        workers = @jobs || 1
        line = +"loadout precompile: "
        line << "#{boot.summary}; " if boot
        line << format("%d files (%s) in %.1f s with %d worker%s; %d skipped (do not load); " \
                       "%d failed; %s", files.size, counts.join(", "), seconds, workers, workers == 1 ? "" : "s",
                       bad.size, failures.size, index)
        line << "; #{self_cache}" if self_cache
        line << "; compile cache skipped (#{@skipped})" if @skipped
        @off.to_h.each { |kind, why| line << "; #{kind} off (#{why})" }
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

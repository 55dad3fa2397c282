# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "../last_boot"
require_relative "../gc_settings"

module Loadout
  class CLI
    # `loadout bench [--rounds N] [-- COMMAND...]`: how long the app this is run in takes to boot,
    # with and without loadout: plain Ruby (LOADOUT_DISABLE=1), a cold cache (empty), a warm one,
    # the warm one with the RUBY_GC_* settings `loadout gc` gives for this app (GCSettings), and a
    # CI-style one (built by a copy of the app at another path, as a CI job restores a cache into
    # a fresh checkout: every app file is revalidated by digest, the load-path index rebuilt).
    # Each boot is a fresh process, timed until it exits; whatever it leaves running in its
    # process group (the app's own children: loadout starts none) is waited for before the next,
    # so that no boot competes with the one before it. Caches live in a temporary directory
    # (LOADOUT_CACHE_DIR): the app's own cache and files are never touched. Prints one small table.
    class Bench # :nodoc:
      BANNER = <<~TEXT.chomp
        Usage: loadout bench [--rounds N] [-- COMMAND...]

        Boots the app in this directory N times each: plain Ruby (LOADOUT_DISABLE=1), loadout with a
        cold cache, a warm cache, the warm cache with the GC settings `loadout gc` gives for this app,
        and a CI-style cache (built by a copy of the app elsewhere), and prints the median and fastest
        wall time of each. COMMAND (default: Ruby requiring
        config/environment.rb, else config/boot.rb, else bundler/setup and loadout/setup) must set
        loadout up through `require "loadout/setup"`. The app's own cache is not touched.
      TEXT
      COPY_SKIP = %w[.git tmp log node_modules coverage storage].freeze
      SHARED = %w[vendor/bundle node_modules].freeze # symlinked into the copy, not copied
      DRAIN_SECONDS = 120
      # Whatever the caller's environment says, the loadout rows boot with loadout on and writing.
      LOADOUT_ON = { "LOADOUT_DISABLE" => nil, "LOADOUT_READONLY" => nil }.freeze
      # Every row boots with Ruby's GC defaults but the one that sets `loadout gc`'s settings.
      GC_UNSET = ENV.keys.grep(/\ARUBY_GC_/).to_h { |k| [k, nil] }.freeze

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        rounds = 5
        split = @argv.index("--")
        argv = split ? @argv[0...split] : @argv
        command = split ? @argv[(split + 1)..] : nil
        rest, ctx = @cli.parse(argv, "bench", BANNER) do |o|
          o.on("--rounds N", Integer, "boots per scenario (default 5)") do |n|
            raise OptionParser::InvalidArgument, "--rounds #{n}: must be 1 or more" if n < 1

            rounds = n
          end
        end
        return 0 unless ctx
        unless rest.empty?
          raise UsageError.new("bench: unexpected argument #{rest.first} (put the command after --)", ctx.help)
        end
        raise UsageError.new("bench: no command after --", ctx.help) if command&.empty?

        @root = ctx.config.root
        @command = command || default_command
        Dir.mktmpdir("loadout-bench") { |tmp| measure(tmp, rounds) }
      end

      private

      def out
        @cli.out
      end

      def default_command
        %w[config/environment.rb config/boot.rb].each do |file|
          return [RbConfig.ruby, "-e", "require File.expand_path(#{file.dump})"] if File.file?(File.join(@root, file))
        end
        [RbConfig.ruby, "-rbundler/setup", "-rloadout/setup", "-e", ""]
      end

      def measure(tmp, rounds)
        out.puts "loadout bench: `#{@command.join(" ")}` in #{@root}, #{rounds} boot#{"s" unless rounds == 1} each " \
                 "(wall time of the boot process)"
        rows = []
        rows << ["plain Ruby (LOADOUT_DISABLE=1)", times(rounds) { boot(@root, "LOADOUT_DISABLE" => "1") }]
        cold = times(rounds) do
          dir = fresh_dir(tmp)
          boot(@root, "LOADOUT_CACHE_DIR" => dir).tap { ensure_loadout!(dir) }
        end
        rows << ["loadout, cold cache (empty)", cold]
        warm = fresh_dir(tmp)
        2.times { boot(@root, "LOADOUT_CACHE_DIR" => warm) } # fill it, then the racy window's rewrite
        rows << ["loadout, warm cache", times(rounds) { boot(@root, "LOADOUT_CACHE_DIR" => warm) }]
        settings = gc_settings(warm)
        unless settings.empty?
          env = settings.to_h { |name, value, _| [name, value.to_s] }.merge("LOADOUT_CACHE_DIR" => warm)
          rows << ["loadout, warm, `loadout gc` settings", times(rounds) { boot(@root, env) }]
        end
        built = ci_cache(tmp)
        ci = times(rounds) do
          dir = fresh_dir(tmp)
          FileUtils.cp_r("#{built}/.", dir)
          boot(@root, "LOADOUT_CACHE_DIR" => dir)
        end
        rows << ["loadout, CI-style cache", ci]
        table(rows)
        unless settings.empty?
          out.puts "  (GC settings: #{settings.map { |name, value, _| "#{name}=#{value}" }.join(" ")})"
        end
        0
      end

      # What `loadout gc` recommends after the warm boots into +dir+.
      def gc_settings(dir)
        record = LastBoot.read(File.join(dir, "store")) or return []
        GCSettings.recommend(record.filter_map { |k, v| [k.delete_prefix("gc."), v] if k.start_with?("gc.") }.to_h)
      end

      # Boots +rounds+ times; returns the seconds each took.
      def times(rounds, &block)
        Array.new(rounds) { block.call }
      end

      # One boot in +dir+ with +env+ added; returns its wall time. A failing boot stops the bench.
      def boot(dir, env)
        env = LOADOUT_ON.merge(GC_UNSET).merge(env)
        gemfile = ENV["BUNDLE_GEMFILE"].to_s
        # Under `bundle exec`, the copy of the app boots with its own Gemfile, not the original's.
        if dir != @root && gemfile.start_with?("#{@root}/")
          env["BUNDLE_GEMFILE"] = File.join(dir, gemfile.delete_prefix("#{@root}/"))
        end
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        pid = Process.spawn(env, *@command, chdir: dir, pgroup: true, in: File::NULL, out: File::NULL, err: File::NULL)
        _, status = Process.wait2(pid)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        drain(pid)
        return seconds if status.success?

        raise Error, "bench: `#{@command.join(" ")}` failed in #{dir} (#{status}); run it yourself to see why"
      end

      def ensure_loadout!(cache_dir)
        return if File.file?(File.join(cache_dir, "store"))

        raise Error, "bench: `#{@command.join(" ")}` did not set loadout up (nothing was written to " \
                     "LOADOUT_CACHE_DIR); its boot must `require \"loadout/setup\"` (or give the command after --)"
      end

      # A cache filled by booting a copy of the app at another path.
      def ci_cache(tmp)
        copy = File.join(tmp, "checkout", File.basename(@root))
        FileUtils.mkdir_p(copy)
        Dir.children(@root).each do |name|
          next if COPY_SKIP.include?(name)

          FileUtils.cp_r(File.join(@root, name), copy) unless name == "vendor"
        end
        copy_vendor(copy)
        dir = fresh_dir(tmp)
        2.times { boot(copy, "LOADOUT_CACHE_DIR" => dir) }
        dir
      end

      def copy_vendor(copy)
        vendor = File.join(@root, "vendor")
        return unless File.directory?(vendor)

        Dir.children(vendor).each do |name|
          source = File.join(vendor, name)
          target = File.join(copy, "vendor", name)
          FileUtils.mkdir_p(File.dirname(target))
          SHARED.include?("vendor/#{name}") ? File.symlink(source, target) : FileUtils.cp_r(source, target)
        end
      end

      def fresh_dir(tmp)
        @dirs = (@dirs || 0) + 1
        File.join(tmp, "cache-#{@dirs}").tap { |d| FileUtils.mkdir_p(d) }
      end

      # Waits for what the boot left running in its process group (see the class comment).
      def drain(pgid)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + DRAIN_SECONDS
        sleep 0.02 while group_alive?(pgid) && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      end

      def group_alive?(pgid)
        return Process.kill(0, -pgid) && true unless File.directory?("/proc/self")

        Dir.children("/proc").any? do |entry|
          next false unless entry.match?(/\A\d+\z/)

          fields = File.read("/proc/#{entry}/stat").split(") ", 2).last.split
          fields[0] != "Z" && fields[2].to_i == pgid
        rescue SystemCallError
          false
        end
      rescue Errno::ESRCH, Errno::EPERM
        false
      end

      # "vs plain" is a time ratio, as everywhere in loadout's figures: below 1.00x is faster.
      def table(rows)
        plain = median(rows.first[1])
        width = rows.map { |label, _| label.size }.max
        out.puts format("  %-*s %10s %10s %9s", width, "", "median", "fastest", "vs plain")
        rows.each do |label, list|
          out.puts format("  %-*s %7.0f ms %7.0f ms %8.2fx", width, label, median(list) * 1000, list.min * 1000,
                          median(list) / plain)
        end
        out.puts "  (vs plain: the median boot's time over plain Ruby's; below 1.00x is faster)"
      end

      def median(list)
        s = list.sort
        s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
      end
    end
  end
end

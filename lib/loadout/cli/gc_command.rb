# frozen_string_literal: true

require_relative "../last_boot"
require_relative "../gc_settings"

module Loadout
  class CLI
    # `loadout gc`: the RUBY_GC_* settings for this app's boot, from what the last boot ended with
    # (LastBoot's "gc." lines; GCSettings explains the rule and the trade), and where to put them.
    # `--env` prints only the NAME=value lines (`export $(loadout gc --env)`).
    class GCCommand # :nodoc:
      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        env_only = false
        _, ctx = @cli.parse(@argv, "gc", "Usage: loadout gc [--env] [--cache-dir DIR]\n\n#{COMMANDS["gc"]}") do |o|
          o.on("--env", "print only the NAME=value lines") { env_only = true }
        end
        return 0 unless ctx

        unless GCSettings.applies?
          @cli.err.puts "loadout gc: the RUBY_GC_* settings are CRuby's; #{RUBY_ENGINE}'s heap is the JVM's " \
                        "(JAVA_OPTS=-Xms...), so there is nothing to recommend here and boots record no GC figures"
          return 0
        end
        record = LastBoot.read(ctx.store_path)
        gc = record && record.filter_map { |k, v| [k.delete_prefix("gc."), v] if k.start_with?("gc.") }.to_h
        if gc.nil? || gc.empty?
          @cli.err.puts "loadout gc: no boot recorded in #{ctx.config.cache_dir} yet: boot the app once the way it " \
                        "runs (e.g. `bin/rails runner 1`, or `loadout precompile -- COMMAND`), then run this again"
          return 0
        end

        settings = GCSettings.recommend(gc)
        lines = settings.map { |name, value, _| "#{name}=#{value}" }
        return print_env(lines) if env_only

        print_report(record, gc, settings, lines)
        0
      end

      private

      def out
        @cli.out
      end

      def print_env(lines)
        out.puts lines
        0
      end

      def print_report(record, gc, settings, lines)
        out.puts "loadout gc: the last boot (`#{record["program"]}`, pid #{record["pid"]}, #{time(record["at"])}, " \
                 "Ruby #{record["ruby"]}) ran #{gc["count"]} GCs (#{gc["major"]} major)#{gc_time(gc)} and ended with " \
                 "#{slots(gc)} heap slots."
        if record["ruby"] != RUBY_VERSION
          out.puts "  (recorded under Ruby #{record["ruby"]}; this is #{RUBY_VERSION}: " \
                   "boot the app with this Ruby first)"
        end
        if settings.empty?
          out.puts "Ruby's defaults already fit this boot: nothing to set."
          return
        end

        out.puts "Start every process where that boot ended:"
        out.puts
        settings.each { |name, value, why| out.puts format("  %-32s # %s", "#{name}=#{value}", why) }
        out.puts
        out.puts "Ruby reads these only when it starts, so set them where the app's processes start:"
        out.puts "  Dockerfile:  ENV #{lines.join(" ")}"
        out.puts "  Procfile:    web: env #{lines.join(" ")} bundle exec puma"
        out.puts "  CI:          export #{lines.join(" ")}   (or the job's env: block)"
        out.puts "  one command: export $(bundle exec loadout gc --env)"
        out.puts
        out.puts "The trade: the heap is reserved when the process starts (about #{reserved_mb(gc)} MB) instead of " \
                 "grown during the boot; the boot ends with the same heap either way. Higher malloc limits let more " \
                 "garbage build up between GCs for the life of the process (Ruby's own limits grow to these values " \
                 "during the boot anyway, but for a limit past Ruby's 32 MiB cap). Measured in the README " \
                 "(Performance)."
      end

      def slots(gc)
        total = gc["slots"] || gc.select { |k, _| k.match?(/\Apool\d+\.slots\z/) }.values.sum
        total.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
      end

      def gc_time(gc)
        gc["time_ms"] ? " in #{gc["time_ms"]} ms" : ""
      end

      # Bytes of the slots the settings reserve: 40-byte slots before Ruby 3.2, each pool's own size after.
      def reserved_mb(gc)
        pools = gc.keys.grep(/\Apool(\d+)\.slots\z/) { Regexp.last_match(1) }
        bytes = if pools.any? && GCSettings.pools?
                  pools.sum { |i| gc["pool#{i}.slots"].to_i * gc["pool#{i}.slot_size"].to_i }
                else
                  gc["slots"].to_i * 40
                end
        (bytes / 1024.0 / 1024).round
      end

      def time(at)
        at.is_a?(Integer) ? Time.at(at).strftime("%Y-%m-%d %H:%M") : "?"
      end
    end
  end
end

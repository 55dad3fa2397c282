# frozen_string_literal: true

require "etc"
require "fileutils"
require "rbconfig"
require "time"
require_relative "harness"

module Loadout
  module Bench
    # `bench/boot.rb --shapes small,default,large,unbundled`: runs bench/boot.rb once per app shape
    # (each with its own interleaved rounds of plain Ruby, Bootsnap and loadout, and the other
    # options given), reads each run's last line, and prints the shapes side by side. The tables
    # go to bench/results/boot-shapes-<date>.md and boot-<shape>-<date>.md, or with --out FILE
    # to FILE and FILE's name with -<shape> before its extension (a run that must not replace
    # the day's files).
    class BootShapes
      FLAGS = { "small" => %w[--small], "default" => [], "large" => %w[--large], "unbundled" => %w[--unbundled] }.freeze
      COLUMNS = [["warm CPU vs Bootsnap", "warm_cpu_vs_bootsnap"],
                 ["with `loadout gc` settings vs Bootsnap", "gc_warm_cpu_vs_bootsnap"],
                 ["Bootsnap with them vs Bootsnap", "bootsnap_gc_warm_cpu_vs_bootsnap"],
                 ["with `loadout prelude` vs Bootsnap", "prelude_warm_cpu_vs_bootsnap"],
                 ["Bootsnap with it vs Bootsnap", "bootsnap_prelude_warm_cpu_vs_bootsnap"],
                 ["cold CPU vs plain", "cold_cpu_vs_plain"]].freeze

      def initialize(shapes, args, script, out: nil)
        unknown = shapes - FLAGS.keys
        unless unknown.empty?
          raise ArgumentError, "--shapes: unknown shape(s) #{unknown.join(", ")} (one of #{FLAGS.keys.join(", ")})"
        end

        @shapes = shapes
        @args = strip(args)
        @script = script
        @out = out && File.expand_path(out)
      end

      def run
        results = @shapes.to_h do |shape|
          out = path_for(shape)
          cmd = [RbConfig.ruby, @script, *FLAGS.fetch(shape), *@args, "--out", out]
          warn "bench boot: shape #{shape}: #{cmd.drop(1).join(" ")}"
          line = IO.popen(cmd, &:read).lines.grep(/\Abench boot: /).last or
            raise "bench boot: shape #{shape} printed no result line"
          [shape, line.delete_prefix("bench boot: ").split.to_h { |kv| kv.split("=", 2) }]
        end
        lines = report(results)
        out = path_for("shapes")
        File.write(out, "#{lines.join("\n")}\n")
        puts lines, "results: #{out}"
        results.values.all? { |r| r["features_equal"] == "true" } ? 0 : 1
      end

      private

      # Where the table of +name+ (a shape, or "shapes" for the side-by-side one) is written.
      def path_for(name)
        unless @out
          return File.expand_path("../results/boot-#{name}-#{Time.now.utc.strftime("%Y-%m-%d")}.md", __dir__)
        end
        return @out if name == "shapes"

        ext = File.extname(@out)
        "#{@out.delete_suffix(ext)}-#{name}#{ext}"
      end

      # The options every shape shares: not the size presets and not --shapes/--out.
      def strip(args)
        out = []
        skip = false
        args.each do |a|
          if skip
            skip = false
            next
          end
          next if %w[--small --large --unbundled --bundler].include?(a) || a.start_with?("--shapes=", "--out=")

          skip = %w[--shapes --out].include?(a)
          out << a unless skip
        end
        out
      end

      def report(results)
        headers = ["shape", *COLUMNS.map(&:first), "objects loadout / Bootsnap", "GCs loadout / Bootsnap",
                   "instructions loadout / Bootsnap", "with `loadout prelude`: objects, instructions", "same features"]
        rows = results.map do |shape, r|
          [shape, *COLUMNS.map { |_, key| r[key] },
           "#{r["loadout_warm_objects"]} / #{r["bootsnap_warm_objects"]}",
           "#{r["loadout_warm_gc"]} / #{r["bootsnap_warm_gc"]}",
           instructions(r), prelude(r), r["features_equal"]]
        end
        ["# Boot benchmark, every shape, #{Time.now.utc.iso8601}", "",
         "Machine: #{RUBY_DESCRIPTION}; #{Etc.nprocessors} CPUs. Command: `ruby bench/boot.rb --shapes " \
         "#{@shapes.join(",")} #{@args.join(" ")}#{" --out #{@out}" if @out}`. Ratios are per-round medians of CPU " \
         "(user+sys) of warm boots; each shape's own table is in #{File.basename(path_for("<shape>"))}.", "",
         ::Bench.table(rows, headers)]
      end

      def prelude(result)
        objects = result["loadout_prelude_warm_objects"]
        return "n/a" unless objects.to_s.match?(/\A\d+\z/)

        lo = result["loadout_prelude_warm_instructions"]
        "#{objects}, #{lo.to_s.match?(/\A\d+\z/) ? format("%.2fG", lo.to_i / 1e9) : "n/a (--valgrind)"}"
      end

      def instructions(result)
        lo = result["loadout_warm_instructions"]
        bs = result["bootsnap_warm_instructions"]
        return "n/a (--valgrind)" unless lo.to_s.match?(/\A\d+\z/) && bs.to_s.match?(/\A\d+\z/)

        format("%.2fG / %.2fG (%.2fx)", lo.to_i / 1e9, bs.to_i / 1e9, lo.to_f / bs.to_i)
      end
    end
  end
end

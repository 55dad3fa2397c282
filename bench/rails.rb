# frozen_string_literal: true

# The Rails test app (test/rails: Rails 7.2, a dozen scaffolds, Zeitwerk, engines' locales), a
# production boot (`bin/rails runner 1`, eager loading on) by plain Ruby, Bootsnap 1.26.1 and
# loadout, warm, and each cache with the RUBY_GC_* settings `loadout gc` recommends for this app,
# with `loadout prelude`'s directory on RUBYLIB (made by the CLI for this app first), and with both.
# Rounds are interleaved; each boot is a fresh process; CPU is user+sys of the boot; objects and
# GCs come from the boot itself (GC.stat at exit). Bootsnap is set up right after bundler/setup,
# as its README says (a `ruby -e` wrapper around bin/rails), from a Gemfile of its own beside the
# app's (Gemfile.bootsnap: the app's plus bootsnap 1.26.1, installed once into the same bundle
# path); loadout by the app's config/boot.rb.
#
#   bundle exec ruby bench/rails.rb [--rounds N] [--valgrind] [--out FILE]
#
# Last line: bench rails: plain_cpu=N bootsnap_warm_cpu=N loadout_warm_cpu=N loadout_vs_bootsnap=N
#            loadout_gc_vs_bootsnap=N bootsnap_gc_vs_bootsnap=N loadout_objects=N bootsnap_objects=N ...
require "optparse"
require "fileutils"
require "rbconfig"
require "etc"
require "time"
require_relative "support/harness"
require_relative "../test/rails/generate_app"
require_relative "../lib/loadout/last_boot"

ARGS = ARGV.dup.freeze
opts = { rounds: 5, valgrind: false }
OptionParser.new do |o|
  o.banner = "Usage: bundle exec ruby bench/rails.rb [options]"
  o.on("--rounds N", Integer, "interleaved rounds (default #{opts[:rounds]})") { |v| opts[:rounds] = v }
  o.on("--valgrind", "one extra warm boot per tool under cachegrind: instruction counts (slow)") do
    opts[:valgrind] = true
  end
  o.on("--out FILE", "results file (default bench/results/rails-<date>.md)") { |v| opts[:out] = v }
end.parse!

ROOT = File.expand_path("..", __dir__)
app = RailsAppGenerator.path
BOOTSNAP_GEMFILE = File.join(app, "Gemfile.bootsnap")
unless File.file?("#{BOOTSNAP_GEMFILE}.lock")
  File.write(BOOTSNAP_GEMFILE,
             "eval_gemfile File.expand_path(\"Gemfile\", __dir__)\ngem \"bootsnap\", \"1.26.1\", require: false\n")
  FileUtils.cp(File.join(app, "Gemfile.lock"), "#{BOOTSNAP_GEMFILE}.lock")
  env = RailsAppGenerator.clean_env("BUNDLE_GEMFILE" => BOOTSNAP_GEMFILE, "BUNDLE_PATH" => RailsAppGenerator::BUNDLE_PATH)
  system(env, "bundle", "install", "--quiet", chdir: app) or
    abort "bench rails: could not install bootsnap beside the app"
end
bootsnap_paths = nil

REPORT = File.join(ROOT, "tmp/bench/rails_report.rb")
FileUtils.mkdir_p(File.dirname(REPORT))
File.write(REPORT, <<~'RUBY')
  at_exit { $stderr.puts "bench-stats objects=#{GC.stat(:total_allocated_objects)} gc=#{GC.count} major=#{GC.stat(:major_gc_count)}" }
RUBY
CACHE = { "bootsnap" => File.join(app, "tmp/bench-cache-bootsnap"),
          "loadout" => File.join(app, "tmp/bench-cache-loadout") }.freeze
GC_ENV = {}
PRELUDE_DIR = File.join(app, "tmp/bench-prelude")

# +variant+: nil, :gc (GC_ENV), :prelude (PRELUDE_DIR on RUBYLIB) or :prelude_gc (both).
def env_for(tool, variant, bootsnap_paths)
  env = RailsAppGenerator.clean_env("RAILS_ENV" => "production", "SECRET_KEY_BASE" => RailsAppGenerator::SECRET_KEY_BASE,
                                    "RUBYOPT" => "-r#{REPORT}")
  env.merge!(ENV.keys.grep(/\ARUBY_GC_/).to_h { |k| [k, nil] })
  case tool
  when "plain" then env["LOADOUT_DISABLE"] = "1"
  when "bootsnap"
    env.merge!("LOADOUT_DISABLE" => "1", "BUNDLE_GEMFILE" => BOOTSNAP_GEMFILE,
               "BOOTSNAP_CACHE_DIR" => CACHE["bootsnap"])
  when "loadout" then env["LOADOUT_CACHE_DIR"] = CACHE["loadout"]
  end
  env.merge!(GC_ENV) if %i[gc prelude_gc].include?(variant)
  env["RUBYLIB"] = PRELUDE_DIR if %i[prelude prelude_gc].include?(variant)
  env
end

def command(tool)
  if tool == "bootsnap"
    [RbConfig.ruby, "-e",
     'require "bundler/setup"; require "bootsnap/setup"; ARGV.replace(%w[runner 1]); load "bin/rails"']
  else
    [RbConfig.ruby, "bin/rails", "runner", "1"]
  end
end

# [cpu seconds, objects, gcs, output]
def boot(app, tool, variant, bootsnap_paths, prefix: [])
  before = Process.times
  out_r, out_w = IO.pipe
  pid = Process.spawn(env_for(tool, variant, bootsnap_paths), *prefix, *command(tool),
                      chdir: app, out: out_w, err: out_w)
  out_w.close
  output = out_r.read
  _, status = Process.wait2(pid)
  after = Process.times
  raise "#{tool} boot failed (#{status}):\n#{output}" unless status.success?

  cpu = (after.cutime + after.cstime) - (before.cutime + before.cstime)
  m = output.match(/bench-stats objects=(\d+) gc=(\d+) major=(\d+)/)
  [cpu, m && m[1].to_i, m && m[2].to_i, output]
end

warn "bench rails: #{app}"
CACHE.each_value { |dir| FileUtils.rm_rf(dir) }
%w[bootsnap loadout].each { |tool| 2.times { boot(app, tool, nil, bootsnap_paths) } } # cold, then settled
gc = (Loadout::LastBoot.read(File.join(CACHE["loadout"], "store")) || {})
     .filter_map { |k, v| [k.delete_prefix("gc."), v] if k.start_with?("gc.") }.to_h
Loadout::GCSettings.recommend(gc).each { |name, value, _| GC_ENV[name] = value.to_s }
warn "bench rails: GC settings: #{GC_ENV.map { |k, v| "#{k}=#{v}" }.join(" ")}"
# The prelude as its README says: `bundle exec loadout prelude` in the app, as its processes start.
FileUtils.rm_rf(PRELUDE_DIR)
prelude_cmd = [RbConfig.ruby, "-rbundler/setup", File.join(ROOT, "exe/loadout"), "prelude", "--dir", PRELUDE_DIR]
prelude_out = IO.popen(env_for("loadout", nil, bootsnap_paths), prelude_cmd, chdir: app, err: %i[child out], &:read)
abort "bench rails: loadout prelude failed:\n#{prelude_out}" unless $?.success?
warn "bench rails: #{prelude_out.lines.first.strip}"

SCENARIOS = [["plain", nil], ["bootsnap", nil], ["loadout", nil], ["bootsnap", :gc], ["loadout", :gc],
             ["bootsnap", :prelude], ["loadout", :prelude], ["loadout", :prelude_gc]].freeze
name = ->(tool, variant) { variant ? "#{tool}_#{variant}" : tool }
cpu = Hash.new { |h, k| h[k] = [] }
objects = Hash.new { |h, k| h[k] = [] }
gcs = Hash.new { |h, k| h[k] = [] }
opts[:rounds].times do |round|
  SCENARIOS.rotate(round).each do |tool, variant|
    seconds, objs, count, = boot(app, tool, variant, bootsnap_paths)
    key = name.(tool, variant)
    cpu[key] << seconds
    objects[key] << objs
    gcs[key] << count
  end
  warn format("bench rails: round %d/%d %s", round + 1, opts[:rounds],
              cpu.map { |k, v| format("%s=%.2f", k, v.last) }.join(" "))
end

instructions = {}
if opts[:valgrind]
  [["bootsnap", nil], ["loadout", nil], ["loadout", :prelude]].each do |tool, variant|
    cachegrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    _, _, _, output = boot(app, tool, variant, bootsnap_paths, prefix: cachegrind)
    instructions[name.(tool, variant)] = output[/I\s+refs:\s+([\d,]+)/, 1]&.delete(",")&.to_i
  end
end

ratio = lambda do |a, b|
  pairs = cpu[a].zip(cpu[b]).select { |x, y| x && y&.positive? }
  pairs.empty? ? nil : Bench.median(pairs.map { |x, y| x / y })
end
fmt = ->(v) { v ? format("%.2fx", v) : "n/a" }
rows = SCENARIOS.map do |tool, variant|
  key = name.(tool, variant)
  [key, format("%.3f", Bench.median(cpu[key])),
   key == "bootsnap" ? "1.00x" : fmt.(ratio.(key, "bootsnap")),
   Bench.median(objects[key].compact).round, Bench.median(gcs[key].compact).round, instructions[key].to_s]
end
date = Time.now.utc.strftime("%Y-%m-%d")
out = opts[:out] || File.join(ROOT, "bench/results/rails-#{date}.md")
lines = ["# Rails test app, production boot (`bin/rails runner 1`), #{Time.now.utc.iso8601}", "",
         "Machine: #{RUBY_DESCRIPTION}; #{Etc.nprocessors} CPUs; bootsnap #{Gem.loaded_specs["bootsnap"]&.version}; " \
         "#{opts[:rounds]} interleaved rounds; app #{app}.",
         "Command: `bundle exec ruby bench/rails.rb #{ARGS.join(" ")}`; GC settings (`loadout gc`): " \
         "#{GC_ENV.map { |k, v| "#{k}=#{v}" }.join(" ")}", "",
         Bench.table(rows, ["scenario", "median cpu s", "cpu vs bootsnap (per round)", "objects", "GCs",
                            "instructions"]), ""]
FileUtils.mkdir_p(File.dirname(out))
File.write(out, lines.join("\n"))
puts lines
puts "results: #{out}"
puts "bench rails: plain_cpu=#{format("%.3f", Bench.median(cpu["plain"]))} " \
     "bootsnap_warm_cpu=#{format("%.3f", Bench.median(cpu["bootsnap"]))} " \
     "loadout_warm_cpu=#{format("%.3f", Bench.median(cpu["loadout"]))} " \
     "loadout_vs_bootsnap=#{fmt.(ratio.("loadout", "bootsnap"))} " \
     "loadout_gc_vs_bootsnap=#{fmt.(ratio.("loadout_gc", "bootsnap"))} " \
     "bootsnap_gc_vs_bootsnap=#{fmt.(ratio.("bootsnap_gc", "bootsnap"))} " \
     "loadout_prelude_vs_bootsnap=#{fmt.(ratio.("loadout_prelude", "bootsnap"))} " \
     "bootsnap_prelude_vs_bootsnap=#{fmt.(ratio.("bootsnap_prelude", "bootsnap"))} " \
     "loadout_prelude_gc_vs_bootsnap=#{fmt.(ratio.("loadout_prelude_gc", "bootsnap"))} " \
     "loadout_objects=#{Bench.median(objects["loadout"].compact).round} " \
     "bootsnap_objects=#{Bench.median(objects["bootsnap"].compact).round}"

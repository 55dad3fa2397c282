# frozen_string_literal: true

# JRuby: does the load-path index (the Ruby twin of the require hook) pay off there? A generated
# app (bench/support/app_generator.rb, the plain layout: N gem dirs on $LOAD_PATH, YAML locales,
# JSON files) booted warm, interleaved rounds, each boot a fresh JVM:
#   plain         no loadout
#   loadout       loadout as it runs on JRuby (index and ISeq cache off: YAML/JSON caches only)
#   loadout_index the same with the index forced on (Loadout::Boot.unsupported(:load_path) -> nil)
#   index_only    the index forced on, no compile cache
#   no_caches     loadout set up with nothing on (what setup itself costs)
# Every boot's digest (features in order, data read) must equal the plain one.
#
#   bin/roots run jruby ruby bench/jruby_index.rb [--gems N] [--files N] [--yaml N] [--rounds N]
#
# Writes bench/results/jruby-index-<date>.md; last line: medians per mode (wall and CPU seconds).
require "optparse"
require "fileutils"
require "rbconfig"
require "time"
require_relative "support/app_generator"

ROOT = File.expand_path("..", __dir__)
opts = { gems: 100, files: 1000, yaml: 50, rounds: 5, seed: 1 }
OptionParser.new do |o|
  o.on("--gems N", Integer) { |v| opts[:gems] = v }
  o.on("--files N", Integer) { |v| opts[:files] = v }
  o.on("--yaml N", Integer) { |v| opts[:yaml] = v }
  o.on("--rounds N", Integer) { |v| opts[:rounds] = v }
  o.on("--out FILE") { |v| opts[:out] = v }
end.parse!(ARGV)

app = File.join(ROOT, "tmp/bench/jruby-app-g#{opts[:gems]}-f#{opts[:files]}-y#{opts[:yaml]}")
unless File.exist?(File.join(app, ".complete"))
  FileUtils.rm_rf(app)
  Loadout::Bench::AppGenerator.new(app, seed: opts[:seed], gems: opts[:gems], files: opts[:files],
                                        yaml: opts[:yaml]).generate
  File.write(File.join(app, ".complete"), "")
end
File.write(File.join(app, "boot.rb"), Loadout::Bench::AppGenerator.entry_point(layout: :plain))

# Loaded before boot.rb by every loadout mode: BENCH_FORCE_INDEX=1 allows the index on this engine
# (the rest decides as usual); BENCH_NO_CC / BENCH_NO_LP turn a part off in Loadout.setup.
PRELUDE = File.join(File.dirname(app), "jruby_index_prelude.rb") # outside the app: not one of its features
File.write(PRELUDE, <<~'RUBY')
  require "loadout"
  if ENV["BENCH_FORCE_INDEX"] == "1"
    Loadout::Boot.singleton_class.prepend(Module.new do
      def unsupported(part)
        part == :load_path ? nil : super
      end
    end)
  end
  over = {}
  over[:stats] = true if ENV["BENCH_STATS"] == "1" # (the untimed boot that reports: stats time every require)
  over[:compile_cache] = false if ENV["BENCH_NO_CC"] == "1"
  over[:load_path_cache] = false if ENV["BENCH_NO_LP"] == "1"
  Loadout.singleton_class.prepend(Module.new { define_method(:setup) { |**kw| super(**kw, **over) } })
RUBY

LOADOUT = { "BENCH_MODE" => "loadout" }.freeze
MODES = {
  "plain" => { "BENCH_MODE" => "plain" },
  "loadout" => LOADOUT,
  "loadout_index" => LOADOUT.merge("BENCH_FORCE_INDEX" => "1"),
  "index_only" => LOADOUT.merge("BENCH_FORCE_INDEX" => "1", "BENCH_NO_CC" => "1"),
  "no_caches" => LOADOUT.merge("BENCH_NO_CC" => "1", "BENCH_NO_LP" => "1")
}.freeze

def boot(app, mode, stats: false)
  env = MODES.fetch(mode)
  env = env.merge("BENCH_STATS" => "1") if stats
  extra = mode == "plain" ? [] : ["-r", PRELUDE]
  env = env.merge("BENCH_CACHE" => File.join(app, "tmp/cache-#{mode}"))
  out_r, out_w = IO.pipe
  before = Process.times
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  pid = Process.spawn(env, RbConfig.ruby, "-I", File.join(ROOT, "lib"), *extra, "boot.rb",
                      chdir: app, out: out_w, err: out_w)
  out_w.close
  output = out_r.read
  _, status = Process.wait2(pid)
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  after = Process.times
  raise "#{mode} boot failed (#{status}):\n#{output}" unless status.success?

  [wall, (after.cutime + after.cstime) - (before.cutime + before.cstime), output]
end

def median(values)
  s = values.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

MODES.each_key { |m| FileUtils.rm_rf(File.join(app, "tmp/cache-#{m}")) }
digests = {}
lines = {}
cold = {}
MODES.each_key do |m|
  wall, cpu, out = boot(app, m)
  cold[m] = [wall, cpu]
  digests[m] = out[/^digest=\S+ features=\d+$/]
end
results = Hash.new { |h, k| h[k] = [] }
opts[:rounds].times do |r|
  MODES.keys.rotate(r).each do |m|
    wall, cpu, out = boot(app, m)
    results[m] << [wall, cpu]
    digests[m] = out[/^digest=\S+ features=\d+$/] if digests[m] == digests["plain"]
  end
end
MODES.each_key do |m|
  next if m == "plain"

  out = boot(app, m, stats: true)[2]
  lines[m] = out.lines.grep(/^\s*(load_path|requires|hits|misses|fallbacks|off|yaml|json)\b/).map(&:strip).first(12)
end

plain = digests["plain"]
report = +"# JRuby: load-path index on and off (#{Time.now.utc.iso8601})\n\n"
report << "`#{RUBY_DESCRIPTION}`, JRUBY_OPTS=#{ENV["JRUBY_OPTS"].inspect}; " \
          "app: #{opts[:gems]} gems, #{opts[:files]} files, " \
          "#{opts[:yaml]} YAML; #{opts[:rounds]} warm rounds, interleaved; medians.\n\n"
report << "| mode | cold wall s | warm wall s | warm CPU s | vs plain (wall) | vs plain (CPU) | same as plain |\n" \
          "|---|---|---|---|---|---|---|\n"
base = median(results["plain"].map(&:first))
base_cpu = median(results["plain"].map(&:last))
MODES.each_key do |m|
  w = median(results[m].map(&:first))
  c = median(results[m].map(&:last))
  report << format("| %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %s |\n", m, cold[m][0], w, c, w / base, c / base_cpu,
                   digests[m] == plain)
end
report << "\nLOADOUT_STATS of one more warm boot per mode, after the timed ones (the timed boots run without it):\n\n"
lines.each { |m, l| report << "- #{m}: #{l.join("; ")}\n" }
out = opts[:out] || File.join(ROOT, "bench/results/jruby-index-#{Time.now.strftime("%Y-%m-%d")}.md")
FileUtils.mkdir_p(File.dirname(out))
File.write(out, report)
puts report
summary = MODES.keys.map do |m|
  wall = median(results[m].map(&:first))
  format("%<m>s_s=%<w>.2f %<m>s_cpu=%<c>.2f", m: m, w: wall, c: median(results[m].map(&:last)))
end
puts "bench jruby_index: #{summary.join(" ")}" \
     " features_equal=#{MODES.keys.all? { |m| digests[m] == plain }}"

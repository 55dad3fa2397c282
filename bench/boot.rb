# frozen_string_literal: true

# Boot benchmark: a generated app (bench/support/app_generator.rb) booted by plain Ruby, Bootsnap
# and loadout, cold (empty cache), warm, and "CI" (every file's mtime changed, caches kept, as
# after a fresh git clone with a restored cache). Rounds are interleaved, each boot is a fresh
# process, and every boot's $LOADED_FEATURES (relative, in order) and the data it read are
# compared with the plain boot's.
#
#   ruby bench/boot.rb [--gems N] [--files N] [--yaml N] [--rounds N] [--seed N] [--small | --large]
#                      [--bundler] [--dev] [--strace] [--valgrind] [--parallel] [--out FILE]
#
# (`loadout bench`, in an app, times that app's own boot instead: see Loadout::CLI::Bench.)
#
# --large is the size seed 000/001 describe (300 gem dirs, 6,000 Ruby files, 400 YAML files) in
# the layout a Bundler app has (--bundler: see AppGenerator::BUNDLER_BOOT), and adds the two
# single-layer comparisons (load-path cache only, compile cache only; warm) against Bootsnap's.
# CPU is the boot's and everything it started (the bench is a child subreaper: a background
# worker a boot leaves behind is waited for and counted). Each boot reports the objects it
# allocated and its GC count. --parallel adds N = 1, 4 and 8 cold boots started at once on one
# empty cache dir (parallel test workers on one CI machine): wall until the last one ends, the
# CPU of all of them and of whatever they started, the store's size after, and whether every
# boot loaded what plain Ruby loads. --bundler (so --large) also boots the floor of any cache
# (bench/support/boot_floor.rb): floor_warm, floor_lp_warm and floor_cold, the same app with every
# path, ISeq and data value handed over from memory for free, to show how far a cache can go.
#
# Writes bench/results/boot-<date>.md. Last line:
# bench boot: plain_s=N bootsnap_cold_s=N bootsnap_warm_s=N bootsnap_ci_s=N loadout_cold_s=N
#             loadout_warm_s=N loadout_ci_s=N features_equal=true|false loadout_warm_objects=N
#             bootsnap_warm_objects=N loadout_warm_gc=N bootsnap_warm_gc=N warm_cpu_vs_bootsnap=Nx
#             cold_cpu_vs_plain=Nx gc_warm_cpu_vs_bootsnap=Nx bootsnap_gc_warm_cpu_vs_bootsnap=Nx
#             loadout_warm_instructions=N bootsnap_warm_instructions=N
#             [floor_warm_s=N floor_lp_warm_s=N floor_cold_s=N]   (medians, one line)
#
# --shapes small,default,large,unbundled runs the script once per shape (the same other options)
# and prints one table of every shape side by side (bench/results/boot-shapes-<date>.md).

require "optparse"
require "fileutils"
require "rbconfig"
require "open3"
require "etc"
require "time"
require_relative "support/app_generator"
require_relative "support/harness"
require_relative "support/subreaper"

ROOT = File.expand_path("..", __dir__)
ARGS = ARGV.dup.freeze
opts = { gems: 120, files: 1200, yaml: 50, rounds: 5, seed: 1, dev: false, strace: false, valgrind: false,
         layout: :plain, parallel: false }
OptionParser.new do |o|
  o.banner = "Usage: ruby bench/boot.rb [options]"
  o.on("--gems N", Integer, "gem directories on $LOAD_PATH (default #{opts[:gems]})") { |v| opts[:gems] = v }
  o.on("--files N", Integer, "Ruby files across the gems (default #{opts[:files]})") { |v| opts[:files] = v }
  o.on("--yaml N", Integer, "YAML locale files read at boot (default #{opts[:yaml]})") { |v| opts[:yaml] = v }
  o.on("--rounds N", Integer, "interleaved rounds (default #{opts[:rounds]})") { |v| opts[:rounds] = v }
  o.on("--seed N", Integer, "generator seed (default #{opts[:seed]})") { |v| opts[:seed] = v }
  o.on("--small", "the bin/demo preset (~30 s): 40 gems, 300 files, 20 YAML, 3 rounds") do
    opts.merge!(gems: 40, files: 300, yaml: 20, rounds: 3)
  end
  o.on("--large", "seed 000/001's size, Bundler layout, single-layer scenarios: 300 gems, 6,000 files, 400 YAML") do
    opts.merge!(gems: 300, files: 6000, yaml: 400, rounds: 5, layout: :bundler)
  end
  o.on("--unbundled", "the large size without Bundler: RubyGems' require in place, lib dirs unshifted onto " \
                      "$LOAD_PATH ahead of RubyGems' insert index, most requires already loaded, optional requires, " \
                      "autoload") do
    opts.merge!(gems: 300, files: 6000, yaml: 400, rounds: 5, layout: :unbundled)
  end
  o.on("--bundler", "the Bundler layout (gem home, shuffled lib dirs ahead of Ruby's, Zeitwerk app)") do
    opts[:layout] = :bundler
  end
  o.on("--dev", "development_mode: true for both caches (default: false, like production)") { opts[:dev] = true }
  o.on("--strace", "one extra boot per scenario under strace -c -f: syscall counts") { opts[:strace] = true }
  o.on("--parallel", "also N = 1, 4, 8 cold boots at once on one empty cache: total CPU, store size") do
    opts[:parallel] = true
  end
  o.on("--valgrind", "one extra boot per scenario under valgrind (cachegrind): instruction counts; slow") do
    opts[:valgrind] = true
  end
  o.on("--only LIST", "comma-separated scenarios to run (e.g. bootsnap_warm,loadout_warm; plain always runs)") do |v|
    opts[:only] = v.split(",")
  end
  o.on("--shapes LIST",
       "run each shape (small, default, large, unbundled) in turn and compare them in one table") do |v|
    opts[:shapes] = v.split(",")
  end
  o.on("--out FILE", "results file (default bench/results/boot-<date>.md; with --shapes the side-by-side table, " \
                     "each shape's beside it as FILE-<shape>.md)") { |v| opts[:out] = v }
end.parse!(ARGV)

if opts[:shapes]
  require_relative "support/boot_shapes"
  exit Loadout::Bench::BootShapes.new(opts[:shapes], ARGS, __FILE__, out: opts[:out]).run
end

def median(values)
  s = values.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

# Bootsnap (and its msgpack) come from the bundle, loaded in the children without bundler.
def bootsnap_env
  ENV["BUNDLE_GEMFILE"] ||= File.join(ROOT, "Gemfile")
  require "bundler"
  Bundler.setup
  spec = Gem.loaded_specs["bootsnap"] or return nil
  { paths: spec.full_require_paths, gem_path: ([Bundler.bundle_path.to_s] + Gem.path).uniq.join(File::PATH_SEPARATOR),
    version: spec.version.to_s }
rescue LoadError, StandardError => e
  warn "bench boot: bootsnap unavailable (#{e.class}: #{e.message}); its scenarios are skipped"
  nil
end

layout = opts[:layout] == :plain ? "" : "-#{opts[:layout]}"
app = File.join(ROOT, "tmp/bench/app-s#{opts[:seed]}-g#{opts[:gems]}-f#{opts[:files]}-y#{opts[:yaml]}#{layout}")
marker = File.join(app, ".complete")
unless File.exist?(marker)
  warn "bench boot: generating #{app}"
  Loadout::Bench::AppGenerator.new(app, seed: opts[:seed], gems: opts[:gems], files: opts[:files], yaml: opts[:yaml],
                                        layout: opts[:layout]).generate
  File.write(marker, "")
end
# An app generated before its entry point last changed gets the current one (same tree otherwise).
entry = File.join(app, "boot.rb")
entry_source = Loadout::Bench::AppGenerator.entry_point(layout: opts[:layout])
File.write(entry, entry_source) unless File.read(entry) == entry_source
# (Not tmp/: the prelude's rubygems.rb is there.)
rb_files = Dir.glob(File.join(app, "**/*.rb")).count { |f| !f.start_with?(File.join(app, "tmp/")) }

# What a boot leaves running is reparented to us: waited for and counted. Before Bundler.setup:
# the subreaper loads fiddle, a bundled gem on Ruby 4.0, which Bundler warns about once it is set
# up and fiddle is not in the Gemfile.
Bench::Subreaper.enable
bs = bootsnap_env
BS = bs # (probe_state boots too)
OPTS = opts
LAYERS = opts[:layout] != :plain # the Zeitwerk app, the single-layer and floor scenarios
ZEITWERK = LAYERS ? Bench.gem_paths("zeitwerk") : []
# Single-layer scenarios keep caches of their own: "<mode>_lp" (load-path cache only), "_cc".
# The "_gc" modes boot with the RUBY_GC_* settings `loadout gc` recommends (GC_ENV), on the
# cache of the same tool without them.
CACHES = %w[bootsnap loadout bootsnap_lp loadout_lp bootsnap_cc loadout_cc]
         .to_h { |m| [m, File.join(app, "tmp/cache-#{m}")] }
         .then do |c|
           c.merge("loadout_gc" => c["loadout"], "bootsnap_gc" => c["bootsnap"],
                   "loadout_prelude" => c["loadout"], "bootsnap_prelude" => c["bootsnap"],
                   "loadout_prelude_gc" => c["loadout"])
         end.freeze
GC_ENV = {} # filled before the rounds (see below)
# The "_prelude" modes boot with `loadout prelude`'s directory on RUBYLIB (made before the rounds),
# on the cache of the same tool without it.
PRELUDE_DIR = File.join(app, "tmp/prelude")
# The floor scenarios' recording (bench/support/boot_floor.rb), made once per run by "floor_learn".
FLOOR_FILE = File.join(app, "tmp/floor.marshal")
BASE_ENV = ENV.keys.grep(/\A(BUNDLE|BUNDLER|RUBYOPT|RUBYLIB|LOADOUT_|BOOTSNAP_|DISABLE_BOOTSNAP|GEM_HOME|RUBY_GC_)/)
              .to_h { |k| [k, nil] }.merge("LOADOUT_PURE" => ENV["LOADOUT_PURE"]).freeze

# +mode+: plain, bootsnap, loadout, or bootsnap_lp / loadout_cc & co. (one layer only).
def command(mode, bs)
  tool = mode.split("_").first
  args = [RbConfig.ruby]
  ZEITWERK.each { |p| args += ["-I", p] }
  args += ["-I", File.join(ROOT, "lib")] if tool == "loadout"
  bs[:paths].each { |p| args += ["-I", p] } if tool == "bootsnap" && bs
  args + ["boot.rb"]
end

def env_for(mode, bs, dev)
  tool, layers, more = mode.split("_")
  env = BASE_ENV.merge("BENCH_MODE" => tool, "BENCH_DEV" => dev ? "1" : "0",
                       "BENCH_LAYERS" => layers && !%w[gc prelude].include?(layers) ? layers : "all")
  env.merge!(GC_ENV) if layers == "gc" || more == "gc" # ("loadout_prelude_gc": both)
  env["RUBYLIB"] = PRELUDE_DIR if layers == "prelude"
  env["BENCH_CACHE"] = CACHES[mode] if CACHES[mode]
  if tool == "floor" # "floor_learn", "floor_warm", "floor_lp_warm", "floor_cold": the phase rides in the mode
    env.merge!("BENCH_FLOOR_PHASE" => layers, "BENCH_FLOOR_LIB" => File.join(__dir__, "support/boot_floor.rb"),
               "BENCH_CACHE" => FLOOR_FILE)
  end
  # Every tool boots with the GEM_PATH Bootsnap needs (its bundle's gem dir first): RubyGems
  # reads every spec on that path when a require raises LoadError (Gem.try_activate), so a
  # shorter path for some tools would make their boots cheaper for a reason that is not theirs.
  env["GEM_PATH"] = bs[:gem_path] if bs
  env
end

# Runs one boot; returns [seconds, digest line]. The child gets its own process group, and the
# timing stops when the child exits, but the next boot waits until the whole group is gone: a
# cache may finish its writes in another process (loadout does not), and a warm run must not
# race it. (Bench::Subreaper is enabled before Bundler.setup, above.)
def boot(app, mode, bs, dev, prefix: [])
  out_r, out_w = IO.pipe
  cpu_before = Process.times
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  pid = Process.spawn(env_for(mode, bs, dev), *prefix, *command(mode, bs), chdir: app, out: out_w, err: out_w,
                                                                           pgroup: true)
  out_w.close
  output = out_r.read
  _, status = Process.wait2(pid)
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  out_r.close
  Bench::Subreaper.reap_all # whatever the boot started, to its end
  cpu_after = Process.times
  # CPU (user + sys) of the boot and of every process it started: far less sensitive to a busy
  # machine than wall, and it counts background work.
  cpu = (cpu_after.cutime + cpu_after.cstime) - (cpu_before.cutime + cpu_before.cstime)
  raise "#{mode} boot failed (#{status}):\n#{output}" unless status.success?

  [seconds, output[/^digest=\S+ features=\d+$/], output, cpu]
end

# "CI": same content, new mtimes (a fresh clone with a restored cache).
def touch_all(app, stamp)
  Dir.glob(File.join(app, "{gems,gemhome,app,config}/**/*.{rb,yml,json}")).each { |f| File.utime(stamp, stamp, f) }
end

LAYERED = %w[bootsnap_lp_warm loadout_lp_warm bootsnap_cc_warm loadout_cc_warm].freeze
# What a cache doing its job for free would cost: warm, the load-path part alone (warm), and cold
# (bench/support/boot_floor.rb).
FLOORS = %w[floor_warm floor_lp_warm floor_cold].freeze
# Warm boots with the GC settings `loadout gc` recommends for this app (both tools, same settings).
GC_TUNED = %w[bootsnap_gc_warm loadout_gc_warm].freeze
# Warm boots with `loadout prelude`'s directory on RUBYLIB (both tools: it serves Ruby's own
# files before either is loaded).
PRELUDED = %w[bootsnap_prelude_warm loadout_prelude_warm loadout_prelude_gc_warm].freeze
# Warm scenarios whose cache another phase's touch can leave stale: settled by an untimed boot.
SETTLED = (LAYERED + GC_TUNED + PRELUDED).freeze
ALL_SCENARIOS = (%w[plain bootsnap_cold bootsnap_warm bootsnap_ci loadout_cold loadout_warm loadout_ci] +
                 (LAYERS ? LAYERED + FLOORS : []) + GC_TUNED + PRELUDED).freeze
unknown = (opts[:only] || []) - ALL_SCENARIOS
unless unknown.empty?
  abort "bench boot: --only: unknown scenario(s) #{unknown.join(", ")} (one of #{ALL_SCENARIOS.join(", ")})"
end
SCENARIOS = (opts[:only] ? ALL_SCENARIOS.select { |s| s == "plain" || opts[:only].include?(s) } : ALL_SCENARIOS).freeze
times = Hash.new { |h, k| h[k] = [] }
cpus = Hash.new { |h, k| h[k] = [] }
objects = Hash.new { |h, k| h[k] = [] }
gcs = Hash.new { |h, k| h[k] = [] }
digests = Hash.new { |h, k| h[k] = [] }
notes = []
reference = nil
features_equal = true
stamp = Time.now - 86_400

# "loadout_lp_warm" -> "loadout_lp"; "loadout_warm" -> "loadout"; a floor scenario is its own mode.
mode_of = ->(scenario) { FLOORS.include?(scenario) ? scenario : scenario.sub(/_(cold|warm|ci)\z/, "") }
run = lambda do |scenario, **kw|
  mode = mode_of.(scenario)
  return if mode.start_with?("bootsnap") && !bs

  seconds, digest, output, cpu = boot(app, mode, bs, opts[:dev], **kw)
  cpus[scenario] << cpu
  if (m = output.match(/^stats objects=(\d+) gc=(\d+)$/))
    objects[scenario] << m[1].to_i
    gcs[scenario] << m[2].to_i
  end
  reference ||= digest if scenario == "plain"
  unless digest && digest == reference
    features_equal = false
    notes << "#{scenario}: features/data differ from plain (#{digest.inspect} vs #{reference.inspect})"
    warn "bench boot: #{scenario} booted differently:\n#{output.lines.last(5).join}"
  end
  digests[scenario] << digest
  times[scenario] << seconds
  seconds
end

warn "bench boot: #{rb_files} Ruby files, #{opts[:gems]} gem dirs, #{opts[:yaml]} YAML; #{opts[:rounds]} rounds"
# A file changed less than 2 s before it is cached (its ctime, which utime sets to now) is not
# trusted by stat alone at the next boot: loadout then checks its content (git's racy-clean
# rule; bootsnap has none). A real app is cached long after its files were written; here the
# CI scenario touches every file seconds before the next round's cold boot caches them, which
# would turn the following "warm" boot into a content check. So a cold boot waits until the
# last touch (or the generation) is 2.1 s old, untimed, for both tools.
last_touch = File.mtime(marker)
settle = lambda do
  wait = 2.1 - (Time.now - last_touch)
  sleep(wait) if wait.positive?
end
# One untimed plain boot first: the reference digest, and a warm page cache for everyone.
boot(app, "plain", bs, opts[:dev]).then { |_, digest, _| reference = digest }
# The single-layer caches are filled once, untimed (cold, then a warm boot that settles them).
LAYERED.each do |scenario|
  next unless SCENARIOS.include?(scenario) && (bs || !scenario.start_with?("bootsnap"))

  FileUtils.rm_rf(CACHES[mode_of.(scenario)])
  2.times { boot(app, mode_of.(scenario), bs, opts[:dev]) }
end
# Warm or CI scenarios run without their cold one (--only): their cache is filled the same way.
%w[bootsnap loadout].each do |mode|
  next if SCENARIOS.include?("#{mode}_cold")
  next if SCENARIOS.none? { |s| s.start_with?("#{mode}_") && !LAYERED.include?(s) }
  next if mode == "bootsnap" && !bs

  FileUtils.rm_rf(CACHES[mode])
  settle.call
  2.times { boot(app, mode, bs, opts[:dev]) }
end
boot(app, "floor_learn", bs, opts[:dev]) if SCENARIOS.include?("floor_warm")
# The settings `loadout gc` prints after a warm boot of this app (a cache of their own, cold then
# warm; the warm boot's numbers are the ones recorded).
unless (SCENARIOS & (GC_TUNED + ["loadout_prelude_gc_warm"])).empty?
  require_relative "../lib/loadout/last_boot"
  rec_cache = File.join(app, "tmp/cache-gc-record")
  FileUtils.rm_rf(rec_cache)
  settle.call
  2.times do
    Process.wait(Process.spawn(env_for("loadout", bs, opts[:dev]).merge("BENCH_CACHE" => rec_cache),
                               *command("loadout", bs), chdir: app, out: File::NULL, err: File::NULL))
  end
  recorded = Loadout::LastBoot.read(File.join(rec_cache, "store")) || {}
  gc = recorded.filter_map { |k, v| [k.delete_prefix("gc."), v] if k.start_with?("gc.") }.to_h
  Loadout::GCSettings.recommend(gc).each { |name, value, _| GC_ENV[name] = value.to_s }
  warn "bench boot: GC settings for the _gc scenarios: #{GC_ENV.map { |k, v| "#{k}=#{v}" }.join(" ")}"
end
# `loadout prelude` for this app, as its README says (the CLI, with the Ruby that boots it). The
# bench apps put their gems on $LOAD_PATH themselves: a Gemfile path that does not exist keeps the
# CLI from taking this repository's Gemfile (the app dir is inside it) for the app's.
unless (SCENARIOS & PRELUDED).empty?
  FileUtils.rm_rf(PRELUDE_DIR)
  prelude_env = BASE_ENV.merge("BUNDLE_GEMFILE" => File.join(app, "Gemfile"))
  prelude_env["GEM_PATH"] = bs[:gem_path] if bs
  out, status = Open3.capture2e(prelude_env, RbConfig.ruby, "-I", File.join(ROOT, "lib"),
                                File.join(ROOT, "exe/loadout"), "prelude", "--dir", PRELUDE_DIR, chdir: app)
  abort "bench boot: loadout prelude failed:\n#{out}" unless status.success?
  warn "bench boot: #{out.lines.first.strip}"
end
opts[:rounds].times do |round|
  SCENARIOS.each do |scenario|
    mode = mode_of.(scenario)
    phase = scenario[/(cold|warm|ci)\z/]
    # The last "ci" touch changed every mtime: the caches of the scenarios that share no phase
    # with it (single-layer, GC-tuned) are stale for Bootsnap (loadout's revalidate by content).
    # One untimed boot settles both before the timed one.
    boot(app, mode, bs, opts[:dev]) if SETTLED.include?(scenario)
    case phase
    when "cold"
      FileUtils.rm_rf(CACHES[mode]) if CACHES[mode]
      settle.call
    when "ci"
      stamp += 60
      touch_all(app, stamp)
      last_touch = Time.now
    end
    run.call(scenario)
  end
  warn format("bench boot: round %d/%d %s", round + 1, opts[:rounds],
              SCENARIOS.map { |s| times[s].last && format("%s=%.2f", s, times[s].last) }.compact.join(" "))
end

# Optional per-scenario syscall and instruction counts (one extra boot each, untimed).
def probe_state(app, scenario, stamp)
  phase = scenario[/(cold|warm|ci)\z/]
  cache = CACHES[scenario.sub(/_(cold|warm|ci)\z/, "")]
  FileUtils.rm_rf(cache) if phase == "cold" && cache
  touch_all(app, stamp) if phase == "ci"
  boot(app, scenario.sub(/_(cold|warm|ci)\z/, ""), BS, OPTS[:dev]) if SETTLED.include?(scenario) # (see the rounds)
end

extra = Hash.new { |h, k| h[k] = {} }
if opts[:strace]
  SCENARIOS.each do |scenario|
    next if scenario.start_with?("bootsnap") && !bs

    stamp += 60
    probe_state(app, scenario, stamp)
    log = File.join(app, "tmp/strace-#{scenario}.txt")
    FileUtils.mkdir_p(File.dirname(log))
    boot(app, mode_of.(scenario), bs, opts[:dev], prefix: ["/usr/bin/strace", "-c", "-f", "-o", log])
    text = File.read(log)
    total = text[/^\S+\s+\S+\s+\S+\s+(\d+)\s+(\d+)?\s*total$/, 1].to_i
    top = text.lines.grep(/^\s*\d/).map(&:split).reject { |f| f.last == "total" }
              .sort_by { |f| -f[3].to_i }.first(4).map { |f| "#{f.last} #{f[3]}" }
    extra[scenario][:syscalls] = total
    extra[scenario][:top_syscalls] = top.join(", ")
  end
end
if opts[:valgrind]
  SCENARIOS.each do |scenario|
    next if scenario.start_with?("bootsnap") && !bs

    stamp += 60
    probe_state(app, scenario, stamp)
    _, _, output = boot(app, mode_of.(scenario), bs, opts[:dev],
                        prefix: ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"])
    extra[scenario][:instructions] = output[/I\s+refs:\s+([\d,]+)/, 1]&.delete(",")&.to_i
  end
end

# N cold boots at once on one empty cache dir: [wall, cpu of all, cache dir bytes, all correct].
def parallel_cold(app, mode, bs, dev, n, reference)
  FileUtils.rm_rf(CACHES[mode])
  cpu_before = Process.times
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  runs = Array.new(n) do
    r, w = IO.pipe
    pid = Process.spawn(env_for(mode, bs, dev), *command(mode, bs), chdir: app, out: w, err: w, pgroup: true)
    w.close
    [pid, r]
  end
  outputs = runs.map { |pid, r| r.read.tap { r.close; Process.wait(pid) } }
  Bench::Subreaper.reap_all
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  cpu_after = Process.times
  cpu = (cpu_after.cutime + cpu_after.cstime) - (cpu_before.cutime + cpu_before.cstime)
  bytes = Dir.glob(File.join(CACHES[mode], "**/*")).sum { |f| File.file?(f) ? File.size(f) : 0 }
  correct = outputs.all? { |o| o[/^digest=\S+ features=\d+$/] == reference }
  [wall, cpu, bytes, correct]
end

parallel_rows = []
if opts[:parallel]
  settle.call
  [1, 4, 8].each do |n|
    %w[bootsnap loadout].each do |mode|
      next if mode == "bootsnap" && !bs

      wall, cpu, bytes, correct = parallel_cold(app, mode, bs, opts[:dev], n, reference)
      parallel_rows << [n, mode, wall, cpu, bytes, correct]
      warn format("bench boot: %d parallel cold %s boots: wall %.2f s, cpu %.2f s, cache %.1f MB, correct=%s",
                  n, mode, wall, cpu, bytes / 1e6, correct)
    end
  end
end

med = SCENARIOS.to_h { |s| [s, times[s].empty? ? nil : median(times[s])] }
med_cpu = SCENARIOS.to_h { |s| [s, cpus[s].empty? ? nil : median(cpus[s])] }
med_obj = SCENARIOS.to_h { |s| [s, objects[s].empty? ? nil : median(objects[s]).round] }
med_gc = SCENARIOS.to_h { |s| [s, gcs[s].empty? ? nil : median(gcs[s]).round] }
fmt = ->(v) { v ? format("%.3f", v) : "n/a" }
ratio = ->(a, b) { a && b && b.positive? ? format("%.2fx", a / b.to_f) : "n/a" }
# Per-round ratios (each loadout boot against the same round's bootsnap boot), then their
# median: steadier than median/median on a shared machine.
round_ratio = lambda do |a, b, series|
  pairs = series[a].zip(series[b]).select { |x, y| x && y&.positive? }
  pairs.empty? ? "n/a" : format("%.2fx", median(pairs.map { |x, y| x / y }))
end
peer_of = ->(s) { s.start_with?("loadout", "floor") ? s.sub(/\A(loadout|floor)/, "bootsnap") : nil }
date = Time.now.utc.strftime("%Y-%m-%d")
out = opts[:out] || File.join(ROOT, "bench/results/boot-#{date}.md")
lines = []
lines << "# Boot benchmark, #{Time.now.utc.iso8601}"
lines << ""
lines << "App: #{rb_files} Ruby files in #{opts[:gems]} gem dirs on $LOAD_PATH + app/, " \
         "#{opts[:yaml]} YAML locale files " \
         "(seed #{opts[:seed]}#{", #{opts[:layout]} layout, Zeitwerk app" if LAYERS}); " \
         "#{opts[:rounds]} interleaved rounds; development_mode: #{opts[:dev]}."
lines << "Machine: #{RUBY_DESCRIPTION}; #{Etc.nprocessors} CPUs; #{`uname -sr`.strip}; loadout backend " \
         "#{ENV["LOADOUT_PURE"].to_s.match?(/\A(1|true|yes)\z/i) ? "ruby" : "native"}; " \
         "bootsnap #{bs ? bs[:version] : "absent"}."
shown = opts.reject { |k, _| k == :out }.map { |k, v| "#{k}=#{v}" }.join(" ")
lines << "Command: `#{["ruby bench/boot.rb", *ARGS].join(" ")}` (options: #{shown})"
lines << ""
header = "| scenario | median s | min-max s | vs plain | vs bootsnap (same phase, per round) | median cpu s | " \
         "cpu vs bootsnap | objects | GCs | features equal |"
header += " syscalls | top syscalls |" if opts[:strace]
header += " instructions |" if opts[:valgrind]
lines << header
lines << "|#{"---|" * header.count("|").pred}"
SCENARIOS.each do |s|
  next if med[s].nil?

  peer = peer_of.(s)
  row = "| #{s} | #{fmt.(med[s])} | #{fmt.(times[s].min)}-#{fmt.(times[s].max)} | #{ratio.(med[s], med["plain"])} | " \
        "#{peer ? round_ratio.(s, peer, times) : "-"} | #{fmt.(med_cpu[s])} | " \
        "#{peer ? round_ratio.(s, peer, cpus) : "-"} | " \
        "#{med_obj[s] || "n/a"} | #{med_gc[s] || "n/a"} | #{digests[s].uniq == [reference]} |"
  row += " #{extra[s][:syscalls]} | #{extra[s][:top_syscalls]} |" if opts[:strace]
  row += " #{extra[s][:instructions]} |" if opts[:valgrind]
  lines << row
end
lines << ""
lines << "Wall time from spawn to exit of each boot; cpu = user+sys of the boot and of every process it " \
         "started (any it left running included, waited for). Ratios vs plain are median/median, vs bootsnap the " \
         "median of per-round ratios (< 1 is faster). \"ci\" = every source file's mtime changed, caches kept; " \
         "\"lp\"/\"cc\" = that layer only (load-path cache / compile cache), warm."
unless GC_ENV.empty? || cpus["loadout_gc_warm"].empty?
  lines << ""
  lines << "GC settings (`loadout gc` after a warm boot of this app): " \
           "#{GC_ENV.map { |k, v| "#{k}=#{v}" }.join(" ")}. " \
           "CPU per round against Bootsnap's warm boot without them: loadout with them " \
           "#{round_ratio.("loadout_gc_warm", "bootsnap_warm", cpus)}, Bootsnap with them " \
           "#{round_ratio.("bootsnap_gc_warm", "bootsnap_warm", cpus)}; loadout with them against loadout without: " \
           "#{round_ratio.("loadout_gc_warm", "loadout_warm", cpus)}."
end
unless cpus["loadout_prelude_warm"].empty? && cpus["loadout_prelude_gc_warm"].empty?
  lines << ""
  lines << "Prelude (`loadout prelude`'s directory on RUBYLIB: RubyGems' own files served compiled before " \
           "either tool loads). CPU per round against Bootsnap's warm boot without it: loadout with it " \
           "#{round_ratio.("loadout_prelude_warm", "bootsnap_warm", cpus)}, Bootsnap with it " \
           "#{round_ratio.("bootsnap_prelude_warm", "bootsnap_warm", cpus)}; " \
           "loadout with it against loadout without: " \
           "#{round_ratio.("loadout_prelude_warm", "loadout_warm", cpus)}."
  unless cpus["loadout_prelude_gc_warm"].empty?
    lines[-1] += " With the prelude and the GC settings, loadout " \
                 "#{round_ratio.("loadout_prelude_gc_warm", "bootsnap_warm", cpus)} (with the GC settings alone " \
                 "#{round_ratio.("loadout_gc_warm", "bootsnap_warm", cpus)})."
  end
end
notes.uniq.each { |n| lines << "- #{n}" }
unless parallel_rows.empty?
  lines << ""
  lines << "Parallel cold boots on one empty cache dir " \
           "(started at once; CPU of all of them and of whatever they started):"
  lines << ""
  lines << "| N | tool | wall s | cpu s | cpu per boot s | cache dir MB | all correct |"
  lines << "|---|---|---|---|---|---|---|"
  parallel_rows.each do |n, mode, wall, cpu, bytes, correct|
    lines << format("| %d | %s | %.2f | %.2f | %.2f | %.1f | %s |", n, mode, wall, cpu, cpu / n, bytes / 1e6, correct)
  end
end
FileUtils.mkdir_p(File.dirname(out))
File.write(out, "#{lines.join("\n")}\n")
puts lines
puts
puts "results: #{out}"
cold_total = lambda do |scenario|
  pairs = cpus[scenario].zip(cpus["plain"]).select { |x, y| x && y&.positive? }
  pairs.empty? ? "n/a" : format("%.2fx", median(pairs.map { |x, y| x / y }))
end
puts "bench boot: plain_s=#{fmt.(med["plain"])} bootsnap_cold_s=#{fmt.(med["bootsnap_cold"])} " \
     "bootsnap_warm_s=#{fmt.(med["bootsnap_warm"])} bootsnap_ci_s=#{fmt.(med["bootsnap_ci"])} " \
     "loadout_cold_s=#{fmt.(med["loadout_cold"])} loadout_warm_s=#{fmt.(med["loadout_warm"])} " \
     "loadout_ci_s=#{fmt.(med["loadout_ci"])} features_equal=#{features_equal} " \
     "loadout_warm_objects=#{med_obj["loadout_warm"] || "n/a"} " \
     "bootsnap_warm_objects=#{med_obj["bootsnap_warm"] || "n/a"} " \
     "loadout_warm_gc=#{med_gc["loadout_warm"] || "n/a"} bootsnap_warm_gc=#{med_gc["bootsnap_warm"] || "n/a"} " \
     "warm_cpu_vs_bootsnap=#{round_ratio.("loadout_warm", "bootsnap_warm", cpus)} " \
     "cold_cpu_vs_plain=#{cold_total.("loadout_cold")} " \
     "gc_warm_cpu_vs_bootsnap=#{round_ratio.("loadout_gc_warm", "bootsnap_warm", cpus)} " \
     "bootsnap_gc_warm_cpu_vs_bootsnap=#{round_ratio.("bootsnap_gc_warm", "bootsnap_warm", cpus)} " \
     "prelude_warm_cpu_vs_bootsnap=#{round_ratio.("loadout_prelude_warm", "bootsnap_warm", cpus)} " \
     "bootsnap_prelude_warm_cpu_vs_bootsnap=#{round_ratio.("bootsnap_prelude_warm", "bootsnap_warm", cpus)} " \
     "loadout_prelude_warm_objects=#{med_obj["loadout_prelude_warm"] || "n/a"} " \
     "loadout_prelude_warm_instructions=#{extra["loadout_prelude_warm"][:instructions] || "n/a"} " \
     "loadout_warm_instructions=#{extra["loadout_warm"][:instructions] || "n/a"} " \
     "bootsnap_warm_instructions=#{extra["bootsnap_warm"][:instructions] || "n/a"}" \
     "#{" floor_warm_s=#{fmt.(med["floor_warm"])} floor_lp_warm_s=#{fmt.(med["floor_lp_warm"])} " \
        "floor_cold_s=#{fmt.(med["floor_cold"])}" if med["floor_warm"]}"

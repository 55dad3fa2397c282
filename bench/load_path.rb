# frozen_string_literal: true

# Boot of a generated app (GEMS gem dirs on $LOAD_PATH, GEMS * FILES tiny required files):
# plain Ruby vs bootsnap's load-path cache alone vs loadout's load path index alone, warm caches,
# interleaved rounds, medians. Also: loadout's index restore time and syscalls per warm require
# (strace, counted between two marker stats in the child).
#
#   bundle exec ruby bench/load_path.rb            # GEMS=300 FILES=20 ROUNDS=5
#   GEMS=100 FILES=10 ROUNDS=3 bundle exec ruby bench/load_path.rb
#   APP_DIRS=1 GEMS=200 FILES=30 bundle exec ruby bench/load_path.rb
#
# APP_DIRS=1: the same tree, but not under GEM_HOME, so every entry is an app directory (engines,
# packwerk components, path gems): volatile for both tools, checked by directory mtimes.
require "rbconfig"
require "tmpdir"
require "open3"
require_relative "support/gem_tree"

GEMS = Integer(ENV.fetch("GEMS", "300"))
FILES = Integer(ENV.fetch("FILES", "20"))
ROUNDS = Integer(ENV.fetch("ROUNDS", "5"))
LIB = File.expand_path("../lib", __dir__)
WORK = ENV.fetch("BENCH_DIR") { File.join(Dir.tmpdir, "loadout-bench-load-path") }

tree = Loadout::Bench::GemTree.new("#{WORK}/app", gems: GEMS, files: FILES).write
File.write("#{WORK}/load_path.txt", tree.load_path.join("\n"))
File.write("#{WORK}/features.txt", tree.features.join("\n"))

# bootsnap (and msgpack, which its store uses) from the bundle, for a child without Bundler.
def require_paths(name)
  Gem::Specification.find_by_name(name).full_require_paths
rescue Gem::MissingSpecError
  []
end
BOOTSNAP_PATHS = (require_paths("bootsnap") + require_paths("msgpack")).freeze
# bootsnap activates msgpack with `gem`, so the bundle's gem dir goes on GEM_PATH too.
BUNDLE_GEM_DIR = begin
  Gem::Specification.find_by_name("bootsnap").base_dir
rescue Gem::MissingSpecError
  nil
end

CHILD = <<~'RUBY'
  $bench_count = 0
  work = ENV.fetch("BENCH_WORK")
  lp = File.read("#{work}/load_path.txt").split("\n")
  features = File.read("#{work}/features.txt").split("\n")
  $LOAD_PATH.concat(lp)
  case ENV.fetch("BENCH_MODE")
  when "bootsnap"
    require "bootsnap"
    Bootsnap.setup(cache_dir: "#{work}/bootsnap", development_mode: false, load_path_cache: true,
                   compile_cache_iseq: false, compile_cache_yaml: false, compile_cache_json: false)
  when "loadout"
    require "loadout"
    store = Loadout::Store.open("#{work}/loadout.store", fail_safe: true)
    Loadout::LoadPath.install!(store: store)
  end
  File.exist?("/loadout-bench-begin")
  features.each { |f| require f }
  File.exist?("/loadout-bench-end")
  raise "loaded #{$bench_count}" unless $bench_count == features.size
  puts Loadout::LoadPath.stats[:restore_ms] if ENV["BENCH_MODE"] == "loadout"
RUBY
File.write("#{WORK}/child.rb", CHILD)

APP_DIRS = ENV["APP_DIRS"] == "1"
GEM_HOME = APP_DIRS ? "#{WORK}/gem-home" : "#{WORK}/app"
ENV_BASE = { "GEM_HOME" => GEM_HOME, "GEM_PATH" => [GEM_HOME, BUNDLE_GEM_DIR].compact.join(":"),
             "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil,
             "BENCH_WORK" => WORK }.freeze

def command(mode, prefix = [])
  includes = mode == "bootsnap" ? BOOTSNAP_PATHS.flat_map { |p| ["-I", p] } : []
  includes += ["-I", LIB] if mode == "loadout"
  prefix + [RbConfig.ruby, *includes, "#{WORK}/child.rb"]
end

def run(mode, prefix = [])
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  out, err, status = Open3.capture3(ENV_BASE.merge("BENCH_MODE" => mode), *command(mode, prefix))
  raise "#{mode} child failed:\n#{out}\n#{err}" unless status.success?

  [Process.clock_gettime(Process::CLOCK_MONOTONIC) - t, out]
end

def median(list)
  s = list.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

modes = %w[plain bootsnap loadout]
modes -= ["bootsnap"] if BOOTSNAP_PATHS.empty?
puts "app: #{GEMS} #{APP_DIRS ? "app (volatile)" : "gem"} dirs on $LOAD_PATH, #{GEMS * FILES} required files (#{WORK})"
# Cold runs fill the caches (and are reported, but not part of the comparison).
cold = modes.to_h { |m| [m, run(m)[0]] }
times = Hash.new { |h, k| h[k] = [] }
restore = []
ROUNDS.times do
  modes.each do |m|
    t, out = run(m)
    times[m] << t
    restore << Float(out.lines.last) if m == "loadout"
  end
end

# Syscalls between the markers, per required file (strace -c style, from one warm run each).
def syscalls_per_require(mode, count)
  return nil unless system("strace -V > /dev/null 2>&1")

  log = "#{WORK}/strace-#{mode}.log"
  run(mode, ["strace", "-f", "-qq", "-o", log])
  lines = File.readlines(log)
  first = lines.index { |l| l.include?("/loadout-bench-begin") }
  last = lines.rindex { |l| l.include?("/loadout-bench-end") }
  # Per require (between the markers), and before the first require (startup + cache setup).
  [((last - first - 1).to_f / count).round(1), first]
end
# Tracing plain Ruby's millions of failed probes takes minutes: only with STRACE_PLAIN=1.
traced = modes.to_h do |m|
  [m, m == "plain" && ENV["STRACE_PLAIN"] != "1" ? nil : syscalls_per_require(m, GEMS * FILES)]
end
sys = traced.transform_values { |v| v && v[0] }

puts format("%-9s %9s %9s %9s %14s %15s", "mode", "cold_s", "warm_s", "vs_plain", "syscalls/req", "setup_syscalls")
modes.each do |m|
  puts format("%-9s %9.3f %9.3f %8.2fx %14s %15s", m, cold[m], median(times[m]),
              median(times["plain"]) / median(times[m]), sys[m].inspect, traced[m]&.last.inspect)
end
# On a shared machine a boot is often preempted mid-restore: the minimum shows the uncontended cost.
puts "loadout index restore: median #{median(restore).round(2)} ms, min #{restore.min.round(2)} ms " \
     "over #{restore.size} boots"
puts format("bench load_path: restore_ms=%.2f plain_s=%.3f bootsnap_lpc_s=%s loadout_lpc_s=%.3f " \
            "syscalls_per_require=%s",
            median(restore), median(times["plain"]),
            times.key?("bootsnap") ? format("%.3f", median(times["bootsnap"])) : "NA",
            median(times["loadout"]), sys["loadout"].inspect)

# frozen_string_literal: true

# What a fleet worker's first boot costs (issue #22): the Rails test app (test/rails) is built
# once (`loadout precompile --gemfile -- bin/rails runner 1`), its cache archived with tar; then,
# in interleaved rounds, the CPU (user + system, the boot and everything it starts) of
#
#   warm    a boot at the build's path, with the cache it built (stat hits);
#   first   the first boot of a fresh copy of the app at another path with the archive restored
#           (new inodes, mtimes and ctimes: every app file revalidated by digest, relocated);
#   second  the boot after it, at that copy (plain hits again);
#   fleet   N copies at N paths booting at once from their restored archives (CPU per worker);
#   crowd   N warm boots at once at the build's path (CPU per boot): what N processes booting
#           together cost on this machine anyway, the fair base for the fleet's figure.
#
# Prints medians and the per-round ratio first/warm (issue #22 asks <= 1.1x); every boot's
# counters are checked: no ISeq/YAML/JSON miss and no load-path listing made from scratch.
#
#   bundle exec ruby bench/fleet.rb                    # 5 rounds, 8 workers
#   ROUNDS=3 WORKERS=4 RAILS_ENV=test bundle exec ruby bench/fleet.rb
#
# Last line: machine-readable JSON.

require "json"
require "open3"
require "fileutils"
require "tmpdir"
require_relative "../test/rails/generate_app"

$stdout.sync = true
ROUNDS = Integer(ENV.fetch("ROUNDS", "5"))
WORKERS = Integer(ENV.fetch("WORKERS", "8"))
RAILS_ENV = ENV.fetch("RAILS_ENV", "production")
ENV_VARS = RailsAppGenerator.clean_env("RAILS_ENV" => RAILS_ENV, "SECRET_KEY_BASE" => RailsAppGenerator::SECRET_KEY_BASE,
                                       "CI" => "1", "LOADOUT_STATS" => "1")
BOOT = %w[bin/rails runner 1].freeze
CACHE = "tmp/cache/loadout"

# [cpu seconds, wall seconds, stderr] of +cmd+ in +dir+ (the CPU of every process it waited for).
def measure(dir, cmd, env = ENV_VARS)
  before = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  times = Process.times
  out, err, status = Open3.capture3(env, *cmd, chdir: dir)
  after = Process.times
  raise "#{cmd.join(" ")} failed in #{dir}:\n#{out}\n#{err}" unless status.success?

  [after.cutime + after.cstime - times.cutime - times.cstime,
   Process.clock_gettime(Process::CLOCK_MONOTONIC) - before, err]
end

# Raises unless the boot's LOADOUT_STATS report shows nothing compiled.
def check_counters!(err, what)
  %w[iseq yaml json].each do |kind|
    line = err[/^  #{kind}: +(.*)$/, 1] or raise "#{what}: no #{kind} counters:\n#{err}"
    counts = line.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }
    bad = counts.slice("misses", "stale", "corrupt", "skipped", "compiles").reject { |_, v| v.zero? }
    raise "#{what}: #{kind} #{bad}" unless bad.empty?
  end
  rescans = err[/^  load_path: .*\brescans=(\d+)/, 1].to_i
  raise "#{what}: #{rescans} load-path dirs listed" unless rescans.zero?
end

def median(list)
  s = list.sort
  s.size.odd? ? s[s.size / 2] : (s[(s.size / 2) - 1] + s[s.size / 2]) / 2.0
end

Dir.mktmpdir("loadout-fleet") do |tmp|
  build = File.join(tmp, "build/app")
  FileUtils.mkdir_p(File.dirname(build))
  FileUtils.cp_r(RailsAppGenerator.path, build)
  FileUtils.rm_rf(File.join(build, CACHE))
  cpu, wall, = measure(build, %w[bundle exec loadout precompile --gemfile --] + BOOT,
                       ENV_VARS.merge("LOADOUT_STATS" => nil))
  puts format("build: precompile --gemfile -- %s (RAILS_ENV=%s): %.1f s CPU, %.1f s wall", BOOT.join(" "), RAILS_ENV,
              cpu, wall)
  archive = File.join(tmp, "cache.tar")
  system("tar", "-C", build, "-cf", archive, CACHE, exception: true)
  2.times { measure(build, BOOT) } # the build's own stat records, past the racy window

  copy = lambda do |name|
    dir = File.join(tmp, name, "app")
    FileUtils.mkdir_p(File.dirname(dir))
    FileUtils.cp_r(build, dir) # new inodes, mtimes and ctimes: a fresh checkout
    FileUtils.rm_rf(File.join(dir, CACHE))
    system("tar", "-C", dir, "-xf", archive, exception: true)
    dir
  end

  rows = Hash.new { |h, k| h[k] = [] }
  ratios = []
  ROUNDS.times do |round|
    warm, = measure(build, BOOT).tap { |_, _, err| check_counters!(err, "warm boot") }
    dir = copy.("round-#{round}")
    first, = measure(dir, BOOT).tap { |_, _, err| check_counters!(err, "first boot") }
    second, = measure(dir, BOOT).tap { |_, _, err| check_counters!(err, "second boot") }
    dirs = Array.new(WORKERS) { |i| copy.("round-#{round}-worker-#{i}") }
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    times = Process.times
    results = dirs.map { |d| Thread.new { measure(d, BOOT) } }.map(&:value)
    after = Process.times
    results.each { |_, _, err| check_counters!(err, "fleet worker") }
    fleet_wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    # (One process's children counters: the threads' own deltas overlap, the section's do not.)
    fleet = (after.cutime + after.cstime - times.cutime - times.cstime) / WORKERS
    times = Process.times
    crowd = Array.new(WORKERS) { Thread.new { measure(build, BOOT) } }.map(&:value)
    after = Process.times
    crowd.each { |_, _, err| check_counters!(err, "warm boot among #{WORKERS}") }
    rows[:crowd] << (after.cutime + after.cstime - times.cutime - times.cstime) / WORKERS
    rows[:warm] << warm
    rows[:first] << first
    rows[:second] << second
    rows[:fleet] << fleet
    rows[:fleet_wall] << fleet_wall
    ratios << first / warm
    puts format("round %d: warm %.2f s, first %.2f s (%.2fx), second %.2f s, %d workers at once %.2f s CPU each " \
                "(%.1f s wall), %d warm boots at once %.2f s CPU each", round + 1, warm, first, first / warm, second,
                WORKERS, fleet, fleet_wall, WORKERS, rows[:crowd].last)
    dirs.each { |d| FileUtils.rm_rf(File.dirname(d)) }
    FileUtils.rm_rf(File.dirname(dir))
  end
  puts format("medians over %d rounds (CPU s): warm %.2f, first boot at a new path %.2f, the boot after %.2f, " \
              "%d at once %.2f each (%d warm boots at once: %.2f each); first/warm per round: median %.2fx " \
              "(max %.2fx)",
              ROUNDS, median(rows[:warm]), median(rows[:first]), median(rows[:second]), WORKERS, median(rows[:fleet]),
              WORKERS, median(rows[:crowd]), median(ratios), ratios.max)
  puts JSON.generate(rounds: ROUNDS, workers: WORKERS, rails_env: RAILS_ENV,
                     medians: rows.transform_values { |l| median(l).round(3) },
                     first_over_warm: median(ratios).round(3),
                     fleet_over_warm: (median(rows[:fleet]) / median(rows[:warm])).round(3),
                     fleet_over_crowd: (median(rows[:fleet]) / median(rows[:crowd])).round(3))
end

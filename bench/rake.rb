# frozen_string_literal: true

# Stock Rake vs `require "loadout/rake"` on a no-op build of generated projects (see
# bench/support/rake_project.rb): N object FileTasks x 10 shared headers, all up to date.
#
#   ruby bench/rake.rb                     # 20,000 and 2,000 tasks, 5 rounds
#   TASKS=20000,2000 HEADERS=10 ROUNDS=5 ruby bench/rake.rb
#   BEFORE_LIB=/path/to/older/loadout/lib ruby bench/rake.rb   # a third side: another loadout
#   INSTRUCTIONS=4000 ruby bench/rake.rb   # also count instructions (valgrind) on a 4,000-task run
#
# Every sample is a fresh `ruby -e 'require "rake"; Rake.application.run'` process (the bundle's
# rake for both sides), run in interleaved, rotating order; figures are medians of wall time.
# Stat calls come from `strace -f -c` (stat, lstat, newfstatat, statx) and are per object task,
# net of a run of the same Rakefile that builds nothing (`rake baseline`: Ruby boot + rake +
# Rakefile load), as are instructions (valgrind --tool=cachegrind, user space only: a stat's
# kernel time is not in them). decisions_equal compares, for every size, the executed-task output and the
# tree's mtimes after the timed no-op runs, and for the smallest size the dry-run (-n) listings
# after touching one source and one header and deleting one object.
require "rbconfig"
require "tmpdir"
require "open3"
require_relative "support/harness"
require_relative "support/rake_project"

SIZES = ENV.fetch("TASKS", "20000,2000").split(",").map { |s| Integer(s) }
HEADERS = Integer(ENV.fetch("HEADERS", "10"))
ROUNDS = Integer(ENV.fetch("ROUNDS", "5"))
LIB = File.expand_path("../lib", __dir__)
BEFORE_LIB = ENV["BEFORE_LIB"]
MODES = BEFORE_LIB ? %i[stock before loadout] : %i[stock loadout]
INSTRUCTIONS = ENV["INSTRUCTIONS"] && Integer(ENV["INSTRUCTIONS"])
require "rake"
RAKE_LIB = File.dirname($LOADED_FEATURES.find { |f| f.end_with?("/lib/rake.rb") })

def command(mode, *args)
  opts = ["-I", RAKE_LIB]
  opts += ["-I", mode == :before ? BEFORE_LIB : LIB, "-rloadout/rake"] unless mode == :stock
  [RbConfig.ruby, *opts, "-e", 'require "rake"; Rake.application.run', "--", *args]
end

def run!(dir, mode, *args)
  out, err, status = Open3.capture3({ "RUBYOPT" => nil }, *command(mode, *args), chdir: dir)
  abort "rake (#{mode}) failed in #{dir}:\n#{out}\n#{err}" unless status.success?
  [out, err]
end

# stat-family syscalls of one run (strace -f -c, seccomp-bpf so only these calls stop), or nil.
def stat_calls(dir, mode, *args)
  return nil unless Bench.strace?

  _out, err, status = Open3.capture3({ "RUBYOPT" => nil }, "strace", "-f", "-c", "--seccomp-bpf",
                                     "-e", "trace=stat,lstat,newfstatat,statx", *command(mode, *args), chdir: dir)
  return nil unless status.success?

  total = err.lines.grep(/\stotal\s*\z/).last or return nil
  total.split[3].to_i
end

# Instructions of one run (millions), or nil without valgrind.
def instructions(dir, mode, *args)
  _out, err, status = Open3.capture3({ "RUBYOPT" => nil }, "valgrind", "--tool=cachegrind", "--cache-sim=no",
                                     "--cachegrind-out-file=/dev/null", *command(mode, *args), chdir: dir)
  status.success? && (refs = err[/I\s+refs:\s+([\d,]+)/, 1]) ? refs.delete(",").to_i / 1e6 : nil
rescue SystemCallError
  nil
end

# Runs rake in dir; returns [wall seconds, child CPU seconds (user + system), stdout].
def timed(dir, mode)
  cpu = Process.times
  t = Bench.clock
  out, = run!(dir, mode)
  wall = Bench.clock - t
  after = Process.times
  [wall, (after.cutime + after.cstime) - (cpu.cutime + cpu.cstime), out]
end

Dir.mktmpdir("loadout-bench-rake") do |root|
  projects = SIZES.to_h do |n|
    dir = File.join(root, "p#{n}")
    FileUtils.mkdir_p(dir)
    [n, Bench::RakeProject.write(dir, objects: n, headers: HEADERS)]
  end
  before = projects.transform_values { |dir| Bench::RakeProject.state(dir) }

  samples = Hash.new { |h, k| h[k] = [] }
  cpu_samples = Hash.new { |h, k| h[k] = [] }
  outputs = Hash.new { |h, k| h[k] = [] }
  ROUNDS.times do |round|
    SIZES.each do |n|
      MODES.rotate(round).each do |mode|
        secs, cpu, out = timed(projects[n], mode)
        samples[[n, mode]] << secs
        cpu_samples[[n, mode]] << cpu
        outputs[[n, mode]] << out
      end
    end
  end

  decisions = []
  SIZES.each do |n|
    # A no-op executes nothing (the default task has no action) and changes nothing.
    decisions << MODES.all? { |mode| outputs[[n, mode]].uniq == [""] }
    decisions << (Bench::RakeProject.state(projects[n]) == before[n])
  end
  # Decisions that are not a no-op: dry runs list what would execute, in order.
  small = projects[SIZES.min]
  [["src/o7.c", :touch], ["include/h3.h", :touch], ["obj/o5.o", :delete]].each do |path, what|
    full = File.join(small, path)
    saved = File.binread(full) if what == :delete
    mtime = File.mtime(full)
    if what == :touch
      File.utime(Bench::RakeProject::BASE_TIME + 60, Bench::RakeProject::BASE_TIME + 60, full)
    else
      File.delete(full)
    end
    listings = MODES.map { |mode| run!(small, mode, "-n").join }
    decisions << (listings.uniq.size == 1 && listings.first.include?("Execute (dry run) obj/"))
    File.binwrite(full, saved) if what == :delete
    File.utime(mtime, mtime, full)
  end
  decisions_equal = decisions.all?

  stats = SIZES.to_h do |n|
    per_task = MODES.to_h do |mode|
      noop = stat_calls(projects[n], mode)
      base = stat_calls(projects[n], mode, "baseline")
      [mode, noop && base ? (noop - base).fdiv(n) : nil]
    end
    [n, per_task]
  end

  puts "Rake no-op: N object FileTasks x #{HEADERS} shared headers " \
       "(rake #{Rake::VERSION}, #{ROUNDS} interleaved rounds, median wall s)"
  fmt_stat = ->(v) { v ? format("%.2f", v) : "n/a" }
  others = MODES - [:stock]
  rows = SIZES.map do |n|
    wall = MODES.to_h { |mode| [mode, Bench.median(samples[[n, mode]])] }
    cpu = MODES.to_h { |mode| [mode, Bench.median(cpu_samples[[n, mode]])] }
    [n, *MODES.map { |m| format("%.3f", wall[m]) }, *others.map { |m| format("%.2fx", wall[:stock] / wall[m]) },
     *MODES.map { |m| format("%.3f", cpu[m]) }, *others.map { |m| format("%.2fx", cpu[:stock] / cpu[m]) },
     *MODES.map { |m| fmt_stat.(stats[n][m]) }]
  end
  puts Bench.table(rows, ["tasks", *MODES.map { |m| "#{m}_s" }, *others.map { |m| "#{m}_speedup" },
                          *MODES.map { |m| "#{m}_cpu_s" }, *others.map { |m| "#{m}_cpu_speedup" },
                          *MODES.map { |m| "#{m}_stats/task" }])
  puts "wall and CPU (user + system of the rake process) are medians; " \
       "CPU is less sensitive to other load on the machine"
  puts "stat calls: strace -f -c (stat, lstat, newfstatat, statx), " \
       "net of `rake baseline` (boot + Rakefile load), per object task"
  puts "decisions: #{decisions.inspect}"
  if INSTRUCTIONS
    dir = Bench::RakeProject.write(File.join(root, "instructions"), objects: INSTRUCTIONS, headers: HEADERS)
    MODES.each do |mode|
      noop, base = [[], ["baseline"]].map { |args| instructions(dir, mode, *args) }
      next puts "instructions: valgrind unavailable" unless noop && base

      puts format("instructions, %d tasks, %s: %.0fM (boot and Rakefile load %.0fM, run %.0fM, %.0fk per task)",
                  INSTRUCTIONS, mode, noop, base, noop - base, (noop - base) * 1000 / INSTRUCTIONS)
    end
  end

  n = SIZES.max
  fmt = ->(v) { v ? format("%.2f", v) : "nan" }
  puts format("bench rake: tasks=%d stock_s=%.3f loadout_s=%.3f stock_stats_per_task=%s " \
              "loadout_stats_per_task=%s decisions_equal=%s",
              n, Bench.median(samples[[n, :stock]]), Bench.median(samples[[n, :loadout]]),
              fmt.(stats[n][:stock]), fmt.(stats[n][:loadout]), decisions_equal)
end

# frozen_string_literal: true

# Directory scan benchmark (issue 2, seed 000): native d_type walk vs its Ruby twin vs the naive
# Dir.foreach + File.directory? walk vs Dir.glob("**/*") vs `find` (the kernel's getdents floor).
#
#   ruby bench/scan.rb [--dirs N] [--files-per-dir N] [--rounds N]
# Last line: bench scan: native_ms=N ruby_ms=N naive_ms=N glob_ms=N find_ms=N files=N dirs=N

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "optparse"
require "fileutils"
require "tmpdir"
require "loadout"
require "loadout/scan"
require_relative "support/harness"

opts = { dirs: 10_000, files_per_dir: 3, rounds: 7 }
OptionParser.new do |o|
  o.on("--dirs N", Integer) { |v| opts[:dirs] = v }
  o.on("--files-per-dir N", Integer) { |v| opts[:files_per_dir] = v }
  o.on("--rounds N", Integer) { |v| opts[:rounds] = v }
end.parse!(ARGV)

unless Loadout::BACKEND == :native
  abort "bench/scan.rb needs the native extension (run `rake compile`); LOADOUT_PURE is set?"
end

# A monorepo-like tree: nested packages, a few files each, some non-Ruby files.
root = File.join(Dir.tmpdir, "loadout-bench-scan-#{opts[:dirs]}-#{opts[:files_per_dir]}")
marker = File.join(root, ".complete")
unless File.exist?(marker)
  FileUtils.rm_rf(root)
  dirs = [root]
  (opts[:dirs] - 1).times do |i|
    parent = dirs[i / 8] # fan-out of 8 gives a depth of ~5 for 10,000 dirs
    dirs << File.join(parent, "pkg#{i}")
  end
  dirs.each_with_index do |d, i|
    FileUtils.mkdir_p(d)
    opts[:files_per_dir].times { |j| File.write(File.join(d, "file#{j}.rb"), "") }
    File.write(File.join(d, "README.md"), "") if i.even?
  end
  File.write(marker, "")
end

def naive_walk(dir, files, dirs)
  dirs << dir
  Dir.foreach(dir) do |name|
    next if name == "." || name == ".."

    path = "#{dir}/#{name}"
    if File.directory?(path)
      naive_walk(path, files, dirs)
    elsif name.end_with?(".rb", ".so")
      files << path
    end
  end
end

ruby_walk = Loadout::Scan.const_get(:RubyWalk)
exts = Loadout::Scan::DEFAULT_EXTENSIONS
sample = Loadout::Scan.call(root)
files = sample.files.size
dirs = sample.dirs.size
twin = ruby_walk.new(root, exts, ["node_modules"], []).run
abort "Ruby twin disagrees with the native scan" unless twin[0] == sample.files && twin[1] == sample.dirs
n_files = []
naive_walk(root, n_files, [])
abort "naive walk found #{n_files.size} files, scan #{files}" unless n_files.size == files

find_baseline = Bench.median(Array.new(5) { Bench.time_ms { system("find", "/nonexistent-loadout", err: File::NULL) } })
scenarios = {
  native: -> { Loadout::Scan.call(root) },
  ruby: -> { ruby_walk.new(root, exts, ["node_modules"], []).run },
  naive: -> { naive_walk(root, [], []) },
  glob: -> { Dir.glob("**/*", base: root) },
  find: -> { system("find", root, out: File::NULL) },
}
scenarios.each_value(&:call) # warm the page cache and the dentry cache
samples = Bench.interleave(opts[:rounds], scenarios)
samples[:find].map! { |ms| ms - find_baseline } # report find's walk, not its process spawn
med = samples.transform_values { |v| Bench.median(v) }

puts "Scan of #{files} requirable files in #{dirs} directories " \
     "(#{opts[:rounds]} interleaved rounds, medians; find minus #{Bench.fmt(find_baseline)} ms spawn)"
rows = med.map do |name, ms|
  [name, Bench.fmt(ms), format("%.2fx", ms / med[:native]), Bench.fmt(samples[name].min), Bench.fmt(samples[name].max)]
end
puts Bench.table(rows, %w[method median_ms vs_native min_ms max_ms])
puts format("native is %.2fx faster than the naive walk and %.2fx the time of find",
            med[:naive] / med[:native], med[:native] / med[:find])

if Bench.strace?
  lib = File.expand_path("../lib", __dir__)
  prelude = ["ruby", "-I", lib, "-rloadout", "-rloadout/scan", "-e"]
  base = Bench.syscalls([*prelude, "nil"])[:total]
  walks = {
    native: "Loadout::Scan.call(ARGV[0])",
    ruby: "Loadout::Scan.const_get(:RubyWalk).new(ARGV[0], Loadout::Scan::DEFAULT_EXTENSIONS, [], []).run",
    naive: "def w(d) = Dir.foreach(d) { |n| next if n == '.' || n == '..'; p = d + '/' + n; " \
           "w(p) if File.directory?(p) }; w(ARGV[0])",
    glob: "Dir.glob('**/*', base: ARGV[0])",
  }
  rows = walks.map do |name, code|
    s = Bench.syscalls([*prelude, code, root])
    [name, s[:total] - base, (s[:calls]["getdents64"] || 0),
     %w[newfstatat statx stat lstat fstat].sum { |c| s[:calls][c] || 0 }]
  end
  f = Bench.syscalls(["find", root])
  rows << [:find, f[:total], f[:calls]["getdents64"] || 0,
           %w[newfstatat statx stat lstat fstat].sum { |c| f[:calls][c] || 0 }]
  puts
  puts "Syscalls per scan (strace -c -f; Ruby rows minus interpreter startup)"
  puts Bench.table(rows, %w[method syscalls getdents64 stat_family])
end

puts format("bench scan: native_ms=%.1f ruby_ms=%.1f naive_ms=%.1f glob_ms=%.1f find_ms=%.1f files=%d dirs=%d",
            med[:native], med[:ruby], med[:naive], med[:glob], med[:find], files, dirs)

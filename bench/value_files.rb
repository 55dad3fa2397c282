# frozen_string_literal: true

# YAML/JSON files the cache must never make slower than plain Ruby (issue #23, items 3 and 4):
#
#   alias_*     a 1 KB YAML file of 7 levels of 10 aliases (l1: &l1 [*l0, *l0, ...]), loaded with
#               unsafe_load_file, load_file(aliases: true) and I18n's unsafe_load_file(path,
#               symbolize_names: true, freeze: true); target: plain Ruby's time +-20%, cold and warm
#   big_json    an ~80 MB JSON file (400,000 records), over the store's 64 MiB value limit: stored
#               as a negative entry; target: a warm boot <= 1.1x plain Ruby's
#   unfaithful  a YAML file of 20,000 objects of an app class no codec reproduces: remembered as
#               such; target: warm <= 1.1x plain
#   control     a 1 KB YAML file without aliases, loaded like alias_unsafe: what loadout's own setup
#               costs a boot this small, whatever it loads (the alias rows are read against it)
#
# Each boot is a child Ruby: plain, loadout cold and loadout warm, in interleaved rounds. Cold is
# the file's first boot with loadout: a copy of it under a new name, which no boot has seen, on a
# cache that is warm otherwise (a first boot on an empty cache also stores every Ruby file it
# loads and loadout's own: bench/boot.rb measures that); warm is a boot after it. Reported: the
# wall time of the whole boot and the in-process time of the one load call, medians, and their
# ratios to plain Ruby's.
#
# --valgrind adds one plain, cold and warm boot per file under valgrind (cachegrind): instruction
# counts, which a loaded machine does not move (slow: ~10x per boot).
#
#   bundle exec ruby bench/value_files.rb [--rounds N] [--only NAME,...] [--valgrind]
require "optparse"
require "rbconfig"
require "fileutils"
require "tmpdir"
require "json"
require_relative "support/harness"

opts = { rounds: 5, only: nil, valgrind: false }
OptionParser.new do |o|
  o.banner = "Usage: bundle exec ruby bench/value_files.rb [options]"
  o.on("--rounds N", Integer, "interleaved rounds (default 5)") { |v| opts[:rounds] = v }
  o.on("--only LIST", "comma-separated scenario names") { |v| opts[:only] = v.split(",") }
  o.on("--valgrind", "also instruction counts (cachegrind), one boot per kind") { opts[:valgrind] = true }
end.parse!(ARGV)

LIB = File.expand_path("../lib", __dir__)
MSGPACK = Bench.gem_paths("msgpack")
CHILD_ENV = ENV.keys.grep(/\A(RUBYOPT|RUBYLIB|BUNDLE_|BUNDLER_|LOADOUT_)/).to_h { |k| [k, nil] }
               .merge("LOADOUT_PURE" => ENV["LOADOUT_PURE"])

CALLS = {
  "alias_unsafe" => ["alias.yml", "YAML.unsafe_load_file(PATH)"],
  "alias_aliases" => ["alias.yml", "YAML.load_file(PATH, aliases: true)"],
  "alias_i18n" => ["alias.yml", "YAML.unsafe_load_file(PATH, symbolize_names: true, freeze: true)"],
  "big_json" => ["big.json", "JSON.load_file(PATH)"],
  "unfaithful" => ["objects.yml", "YAML.unsafe_load_file(PATH)"],
  "control" => ["plain.yml", "YAML.unsafe_load_file(PATH)"]
}.freeze
scenarios = opts[:only] ? CALLS.slice(*opts[:only]) : CALLS

def write_files(dir)
  lines = ["l0: &l0 [#{(1..10).map { |i| "s#{i}" }.join(", ")}]"]
  (1..7).each { |k| lines << "l#{k}: &l#{k} [#{Array.new(10, "*l#{k - 1}").join(", ")}]" }
  File.write(File.join(dir, "alias.yml"), "#{lines.join("\n")}\n")
  plain = (0..7).map { |k| "l#{k}: [#{Array.new(10) { |i| "s#{k}#{i}" }.join(", ")}]" }
  File.write(File.join(dir, "plain.yml"), "#{plain.join("\n")}\n")
  File.open(File.join(dir, "big.json"), "w") do |f|
    f << "["
    400_000.times do |i|
      f << "," unless i.zero?
      f << JSON.generate({ "id" => i, "name" => "record #{i} #{"x" * 100}", "tags" => %w[alpha beta gamma],
                           "score" => i * 0.5, "ok" => i.even? })
    end
    f << "]"
  end
  File.open(File.join(dir, "objects.yml"), "w") do |f|
    20_000.times { |i| f << "- !ruby/object:BenchThing\n  id: #{i}\n  name: thing #{i}\n" }
  end
end

def script(call, file, dir, cache)
  setup = cache ? "require 'loadout'; Loadout.setup(cache_dir: #{cache.dump}, root: #{dir.dump})\n" : ""
  <<~RUBY
    #{setup}require "yaml"; require "json"
    class BenchThing; attr_accessor :id, :name; end
    PATH = #{File.join(dir, file).dump}
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    value = #{call}
    $stdout.puts "call_s=\#{Process.clock_gettime(Process::CLOCK_MONOTONIC) - t} size=\#{value.size}"
  RUBY
end

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"].freeze

# [wall s, the load call's s, CPU s (user + sys) of the child, instructions (with +prefix+ VALGRIND)].
def boot(script, prefix: [])
  started = Bench.clock
  before = Process.times
  out = IO.popen(CHILD_ENV, [*prefix, RbConfig.ruby, "-I", LIB, *MSGPACK.flat_map { |p| ["-I", p] }, "-e", script,
                             { err: %i[child out] }], &:read)
  wall = Bench.clock - started
  after = Process.times
  raise "boot failed:\n#{out}" unless $?.success?

  [wall, out[/call_s=([\d.e-]+)/, 1].to_f, (after.cutime + after.cstime) - (before.cutime + before.cstime),
   out[/I\s+refs:\s+([\d,]+)/, 1]&.delete(",")&.to_i]
end

Dir.mktmpdir("loadout-bench-values") do |dir|
  warn "bench value_files: writing files..."
  write_files(dir)
  results = {}
  scenarios.each do |name, (file, call)|
    cache = File.join(dir, "cache-#{name}")
    2.times { boot(script(call, file, dir, cache)) } # stored (or remembered) and the self cache written
    samples = Hash.new { |h, k| h[k] = [] }
    kinds = %i[plain cold warm]
    opts[:rounds].times do |round|
      kinds.rotate(round).each do |kind|
        case kind
        when :plain then samples[kind] << boot(script(call, file, dir, nil))
        when :warm then samples[kind] << boot(script(call, file, dir, cache))
        else
          fresh = "#{name}-#{round}-#{File.basename(file)}"
          FileUtils.cp(File.join(dir, file), File.join(dir, fresh))
          samples[kind] << boot(script(call, fresh, dir, cache))
          FileUtils.rm_f(File.join(dir, fresh))
        end
      end
    end
    med = kinds.to_h { |k| [k, Array.new(3) { |i| Bench.median(samples[k].map { |s| s[i] }) }] }
    if opts[:valgrind]
      fresh = "#{name}-valgrind-#{File.basename(file)}"
      FileUtils.cp(File.join(dir, file), File.join(dir, fresh))
      med[:plain] << boot(script(call, file, dir, nil), prefix: VALGRIND)[3]
      med[:cold] << boot(script(call, fresh, dir, cache), prefix: VALGRIND)[3]
      med[:warm] << boot(script(call, file, dir, cache), prefix: VALGRIND)[3]
      FileUtils.rm_f(File.join(dir, fresh))
    end
    results[name] = med
    ratios = %i[cold warm].flat_map { |k| [0, 2, 1].map { |i| med[k][i] / med[:plain][i] } }
    warn format("bench value_files: %-13s plain %.3f s (cpu %.3f, call %.3f)  cold %.2fx (cpu %.2fx, call %.2fx)  " \
                "warm %.2fx (cpu %.2fx, call %.2fx)", name, med[:plain][0], med[:plain][2], med[:plain][1], *ratios)
  end
  ratio = ->(med, kind, i) { format("%.2fx", med[kind][i].to_f / med[:plain][i]) }
  rows = results.map do |name, med|
    [name, format("%.3f / %.3f", med[:plain][0], med[:plain][2]), ratio.(med, :cold, 0), ratio.(med, :cold, 2),
     ratio.(med, :warm, 0), ratio.(med, :warm, 2), "#{ratio.(med, :cold, 1)} / #{ratio.(med, :warm, 1)}"]
  end
  headers = ["file", "plain wall / cpu s", "cold wall", "cold cpu", "warm wall", "warm cpu", "load call cold / warm"]
  if opts[:valgrind]
    headers += ["plain instructions", "cold / warm instructions"]
    rows.zip(results.values).each do |row, med|
      row << med[:plain][3].to_s << "#{ratio.(med, :cold, 3)} / #{ratio.(med, :warm, 3)}"
    end
  end
  puts Bench.table(rows, headers)
  puts "bench value_files: " + results.map { |name, med|
    format("%s_cold=%.2fx %s_warm=%.2fx %s_warm_cpu=%.2fx", name, med[:cold][0] / med[:plain][0], name,
           med[:warm][0] / med[:plain][0], name, med[:warm][2] / med[:plain][2])
  }.join(" ")
end

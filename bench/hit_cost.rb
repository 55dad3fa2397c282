# frozen_string_literal: true

# What one warm ISeq hit costs, in instructions (valgrind --tool=cachegrind): the same file
# fetched N times through RubyVM::InstructionSequence.load_iseq with loadout's hook, with
# Bootsnap's, and Ruby's own load_from_binary of that file's binary (the floor both sit on).
# Each is two processes, N = 0 and N calls with the GC off; the difference over N is one call.
#
#   ruby bench/boot.rb --small                  # generates tmp/bench/app-s1-g40-f300-y20 once
#   ruby bench/hit_cost.rb [--calls N] [--lib DIR] [--file PATH_IN_APP]
#
# Prints one line per tool and the overhead of each above the raw load.
require "optparse"
require "rbconfig"
require "tmpdir"
require "open3"
require_relative "support/harness"

ROOT = File.expand_path("..", __dir__)
opts = { calls: 2000, lib: File.join(ROOT, "lib"), file: "app/models/client_0.rb" }
OptionParser.new do |o|
  o.banner = "Usage: ruby bench/hit_cost.rb [options]"
  o.on("--calls N", Integer, "load_iseq calls per measurement (default #{opts[:calls]})") { |v| opts[:calls] = v }
  o.on("--lib DIR", "loadout's lib dir to measure (default: this checkout's)") { |v| opts[:lib] = File.expand_path(v) }
  o.on("--file PATH", "the app file fetched (default #{opts[:file]})") { |v| opts[:file] = v }
end.parse!(ARGV)
abort "bench hit_cost: --calls must be positive" unless opts[:calls].positive?

APP = File.join(ROOT, "tmp/bench/app-s1-g40-f300-y20")
unless File.file?(File.join(APP, "boot.rb"))
  abort "bench hit_cost: no app at #{APP}: run `ruby bench/boot.rb --small` first"
end
FILE = File.join(APP, opts[:file])
LIB = opts[:lib]
abort "bench hit_cost: no file #{FILE}" unless File.file?(FILE)
abort "bench hit_cost: valgrind is not installed" unless system("valgrind --version", out: File::NULL, err: File::NULL)

# Bootsnap and msgpack from the bundle, as bench/boot.rb gives them to its children.
require "bundler"
Bundler.setup
BOOTSNAP = Bench.gem_paths("bootsnap") + Bench.gem_paths("msgpack")
abort "bench hit_cost: bootsnap is not installed (bin/setup-deps)" if BOOTSNAP.empty?
GEM_PATH = ([Bundler.bundle_path.to_s] + Gem.path).uniq.join(File::PATH_SEPARATOR)

CHILD = <<~'RUBY'
  file, cache, calls = ARGV[0], ARGV[1], Integer(ARGV[2])
  case ENV.fetch("HIT_TOOL")
  when "loadout"
    require "loadout"
    Loadout.setup(cache_dir: cache, root: ENV.fetch("HIT_APP"), development_mode: false)
  when "bootsnap"
    require "bootsnap"
    Bootsnap.setup(cache_dir: cache, development_mode: false, load_path_cache: true, compile_cache_iseq: true,
                   compile_cache_yaml: false, compile_cache_json: false)
  end
  if calls.zero? && ENV["HIT_WARM"] # the cache's first two boots: Ruby loads the file, the tool keeps it
    begin
      load file
    rescue StandardError, ScriptError
      nil # (the file may name constants of an app that is not booted here: it was compiled)
    end
    exit
  elsif ENV["HIT_TOOL"] == "raw"
    binary = RubyVM::InstructionSequence.compile_file(file).to_binary
    GC.disable
    calls.times { RubyVM::InstructionSequence.load_from_binary(binary) }
  else
    RubyVM::InstructionSequence.load_iseq(file) or abort("#{ENV["HIT_TOOL"]}: no cached ISeq for #{file}")
    GC.disable
    calls.times { RubyVM::InstructionSequence.load_iseq(file) }
  end
  exit!(0)
RUBY

def run(tool, cache, calls, prefix: [], warm: false)
  env = { "HIT_TOOL" => tool, "HIT_APP" => APP, "GEM_PATH" => GEM_PATH, "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil,
          "HIT_WARM" => warm ? "1" : nil }
  inc = tool == "bootsnap" ? BOOTSNAP.flat_map { |d| ["-I", d] } : ["-I", LIB]
  out, err, status = Open3.capture3(env, *prefix, RbConfig.ruby, *inc, "-e", CHILD, FILE, cache, calls.to_s)
  abort "bench hit_cost: #{tool} failed (#{status}):\n#{out}#{err}" unless status.success?
  err
end

def instructions(tool, cache, calls)
  err = run(tool, cache, calls, prefix: %w[valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null])
  Integer(err[/I\s+refs:\s+([\d,]+)/, 1].delete(","))
end

Dir.mktmpdir("loadout-hit-cost") do |tmp|
  per_call = %w[raw loadout bootsnap].to_h do |tool|
    cache = File.join(tmp, tool)
    2.times { run(tool, cache, 0, warm: true) } if tool != "raw" # the file cached, then a warm setup
    n = opts[:calls]
    [tool, (instructions(tool, cache, n) - instructions(tool, cache, 0)) / n]
  end
  raw = per_call.fetch("raw")
  puts "one ISeq hit of #{opts[:file]} (instructions per call, #{opts[:calls]} calls, GC off; Ruby #{RUBY_VERSION})"
  per_call.each do |tool, n|
    above = tool == "raw" ? "" : format("  (%+d above load_from_binary)", n - raw)
    puts format("  %-9s %9d%s", tool, n, above)
  end
end

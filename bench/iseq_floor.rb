# frozen_string_literal: true

# How fast can any instruction-sequence cache make a warm boot on this Ruby? The "floor" child
# reads every file's ISeq binary (compiled once, by another process) into a Hash before the clock
# starts, and answers RubyVM::InstructionSequence.load_iseq with load_from_binary(binaries[path]): no lookup,
# no read, no stat, no check. What is left is what every such cache pays: load_from_binary, the
# GC, and running the loaded code. bootsnap's and loadout's warm boots (compile caches only) run
# side by side, interleaved; each child times its boot only (after its cache is set up).
#
#   bundle exec ruby bench/iseq_floor.rb              # 6,000 files, 7 rounds
#   FILES=1000 ROUNDS=5 bundle exec ruby bench/iseq_floor.rb
require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "support/harness"
require_relative "support/compile_app"

FILES = Integer(ENV.fetch("FILES", "6000"))
ROUNDS = Integer(ENV.fetch("ROUNDS", "7"))
LIB = File.expand_path("../lib", __dir__)

BOOTSNAP = Bench.gem_paths("bootsnap").then { |bs| bs.empty? ? bs : bs + Bench.gem_paths("msgpack") }
MSGPACK = Bench.gem_paths("msgpack")
CHILD_ENV = ENV.keys.grep(/\A(RUBYOPT|RUBYLIB|BUNDLE_|BUNDLER_)/).to_h { |k| [k, nil] }

TIMED_BOOT = <<~'RUBY'
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  load File.join(APP, "boot.rb")
  puts ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) * 1000).round(1)
RUBY

def child(kind, app, cache)
  setup = case kind
          when :floor
            <<~RUBY
              binaries = Marshal.load(File.binread(#{cache.dump}))
              GC.start
              RubyVM::InstructionSequence.singleton_class.prepend(Module.new do
                define_method(:load_iseq) { |path| (b = binaries[path]) && RubyVM::InstructionSequence.load_from_binary(b) }
              end)
            RUBY
          when :bootsnap
            <<~RUBY
              require "bootsnap"
              Bootsnap.setup(cache_dir: #{cache.dump}, development_mode: false, load_path_cache: false,
                             compile_cache_iseq: true, compile_cache_yaml: false)
            RUBY
          when :loadout
            <<~RUBY
              require "loadout"; require "loadout/store"; require "loadout/compile_cache"
              Loadout::CompileCache.install!(store: Loadout::Store.open(#{cache.dump}, fail_safe: true, defer_writes: true),
                                             roots: [APP], yaml: false, json: false)
              at_exit { Loadout::CompileCache.finish! }
            RUBY
          end
  paths = { floor: [], bootsnap: BOOTSNAP, loadout: [LIB, *MSGPACK] }.fetch(kind)
  [RbConfig.ruby, *paths.flat_map { |p| ["-I", p] }, "-e", "APP = #{app.dump}\n#{setup}#{TIMED_BOOT}"]
end

# The boot's own figure (ms). Its process group is waited for (loadout starts no process; a
# boot cache that did would be waited for), so no boot ever runs beside another one's work.
def run(cmd)
  io = IO.popen(CHILD_ENV, cmd, err: File::NULL, pgroup: true)
  pid = io.pid
  out = io.read
  io.close
  raise "child failed: #{cmd.last[0, 300]}" unless $?.success?

  Bench.wait_group(pid)
  Float(out.lines.last)
end

abort "bench iseq_floor: the bootsnap gem is needed (bundle install)" if BOOTSNAP.empty?
Dir.mktmpdir("loadout-bench-floor") do |tmp|
  app = File.join(tmp, "app")
  warn "bench iseq_floor: #{FILES} Ruby files, #{ROUNDS} rounds; writing the app..."
  Loadout::Bench::CompileApp.write(app, files: FILES, yaml: 0)
  caches = { floor: File.join(tmp, "floor.marshal"), bootsnap: File.join(tmp, "bootsnap"),
             loadout: File.join(tmp, "loadout.store") }
  system(CHILD_ENV, RbConfig.ruby, "-e", <<~RUBY, exception: true)
    binaries = Dir.glob(File.join(#{app.dump}, "{boot.rb,lib/**/*.rb}")).to_h { |f| [f, RubyVM::InstructionSequence.compile_file(f).to_binary] }
    File.binwrite(#{caches[:floor].dump}, Marshal.dump(binaries))
  RUBY
  sleep 2.1 # past the racy window of the files' ctimes, or the first warm boots only revalidate
  %i[bootsnap loadout].each do |kind|
    2.times { run(child(kind, app, caches[kind])) }
  end
  kinds = %i[floor bootsnap loadout]
  samples = Hash.new { |h, k| h[k] = [] }
  ROUNDS.times do |round|
    kinds.rotate(round).each { |kind| samples[kind] << run(child(kind, app, caches[kind])) }
    warn "  round #{round + 1}/#{ROUNDS}: " + kinds.map { |k| "#{k}=#{samples[k].last.round}ms" }.join(" ")
  end
  med = samples.transform_values { |v| Bench.median(v) }
  per_round = ->(a, b) { Bench.median(samples[a].zip(samples[b]).map { |x, y| x / y }) }
  rows = kinds.map do |k|
    [k, format("%.0f", med[k]), format("%.2fx", med[k] / med[:bootsnap]), format("%.2fx", per_round.(k, :bootsnap))]
  end
  puts Bench.table(rows, ["boot (ms)", "median", "vs bootsnap", "per-round median vs bootsnap"])
  puts "The floor is what a cache that hands Ruby instruction sequences cannot go below on #{RUBY_VERSION}."
  puts format("bench iseq_floor: floor_ms=%.0f bootsnap_ms=%.0f loadout_ms=%.0f floor_vs_bootsnap=%.2f " \
              "loadout_vs_bootsnap=%.2f", med[:floor], med[:bootsnap], med[:loadout], per_round.(:floor, :bootsnap),
              per_round.(:loadout, :bootsnap))
end

# frozen_string_literal: true

# Compile cache boots side by side: plain Ruby, bootsnap's compile cache (ISeq + YAML, load path
# cache off) and loadout's, on a generated app, in interleaved rounds; medians and ratios; then
# where loadout's warm time goes (stat, digest, store read, load_from_binary).
#
#   bundle exec ruby bench/compile_cache.rb            # 6,000 Ruby files, 400 YAML files, 3 rounds
#   FILES=1000 YAML=100 ROUNDS=5 bundle exec ruby bench/compile_cache.rb
#
# Scenarios (each in its own copy of the app, so touching one never warms or chills another):
#   plain            no cache
#   bootsnap_warm    bootsnap, cache filled by earlier boots
#   bootsnap_ci      bootsnap, every file's mtime changed before the boot (a CI checkout with a
#                    restored cache); bootsnap_ci_reval is the same with revalidation: true
#   loadout_cold     empty store before the boot; the boot stores what Ruby compiles (captures)
#   loadout_warm     loadout, store filled by earlier boots
#   loadout_ci       loadout, every file's mtime changed before the boot
require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "support/harness"
require_relative "support/compile_app"

FILES = Integer(ENV.fetch("FILES", "6000"))
YAML_FILES = Integer(ENV.fetch("YAML", "400"))
ROUNDS = Integer(ENV.fetch("ROUNDS", "3"))
METHODS = Integer(ENV.fetch("METHODS", "4"))
LIB = File.expand_path("../lib", __dir__)

# Children get the gems' paths with -I, not Bundler: run this under `bundle exec` (the gems live
# in vendor/bundle) and every scenario still boots without Bundler's setup cost.
CHILD_ENV = ENV.keys.grep(/\A(RUBYOPT|RUBYLIB|BUNDLE_|BUNDLER_)/).to_h { |k| [k, nil] }
               .merge("LOADOUT_PURE" => ENV["LOADOUT_PURE"])

BOOTSNAP_PATHS = Bench.gem_paths("bootsnap").then { |bs| bs.empty? ? bs : bs + Bench.gem_paths("msgpack") }
MSGPACK_PATHS = Bench.gem_paths("msgpack")

def prelude(kind, app, cache)
  case kind
  when :plain then ""
  when :bootsnap, :bootsnap_reval
    <<~RUBY
      require "bootsnap"
      Bootsnap.setup(cache_dir: #{cache.dump}, development_mode: false, load_path_cache: false,
                     compile_cache_iseq: true, compile_cache_yaml: true,
                     revalidation: #{kind == :bootsnap_reval})
    RUBY
  when :loadout
    <<~RUBY
      require "loadout"
      require "loadout/store"
      require "loadout/compile_cache"
      Loadout::CompileCache.install!(store: Loadout::Store.open(#{cache.dump}, fail_safe: true, defer_writes: true),
                                     roots: [#{app.dump}])
      at_exit { Loadout::CompileCache.finish! }
    RUBY
  end
end

def command(kind, app, cache)
  paths = kind == :plain ? [] : (kind == :loadout ? [LIB, *MSGPACK_PATHS] : BOOTSNAP_PATHS)
  script = "#{prelude(kind, app, cache)}load #{File.join(app, "boot.rb").dump}"
  [RbConfig.ruby, *paths.flat_map { |p| ["-I", p] }, "-e", script]
end

# Wall time of one boot.
def run(cmd)
  started = Bench.clock
  pid = Process.spawn(CHILD_ENV, *cmd, out: File::NULL, err: File::NULL)
  _, status = Process.wait2(pid)
  took = Bench.clock - started
  raise "boot failed: #{cmd.last[0, 200]}" unless status.success?

  took
end

def touch_all(app, time)
  Dir.glob("#{app}/**/*.{rb,yml}").each { |f| File.utime(time, time, f) }
end

def cost_split(app, cache)
  script = <<~RUBY
    require "loadout"; require "loadout/store"; require "loadout/compile_cache"
    CC = Loadout::CompileCache
    store = Loadout::Store.open(#{cache.dump}, readonly: true)
    key = CC::Key.new([#{app.dump}])
    variant = key.variant(:iseq, RubyVM::InstructionSequence.compile_option.sort_by { |k, _| k.to_s }.inspect)
    files = Dir.glob(#{"#{app}/lib/**/*.rb".dump})
    keys = files.map { |f| key.for("i", variant, f) }
    t = ->(&b) { s = Process.clock_gettime(Process::CLOCK_MONOTONIC); b.call; (Process.clock_gettime(Process::CLOCK_MONOTONIC) - s) * 1000 }
    blobs = nil
    entries = nil
    r = {}
    r["stat"] = t.call { files.each { |f| CC::Freshness.identity(f) } }
    r["digest (CI only)"] = t.call { files.each { |f| CC::XXH64.file(f) } }
    r["store read"] = t.call { blobs = keys.map { |k| store.get(k) } }
    r["payload check"] = t.call { entries = blobs.map { |b| CC::Entry.load(b) } }
    r["load_from_binary"] = t.call { entries.each { |e| RubyVM::InstructionSequence.load_from_binary(e.payload) } }
    r["MB read"] = blobs.sum(&:bytesize) / 1e6
    p r
  RUBY
  out = IO.popen(CHILD_ENV, [RbConfig.ruby, "-I", LIB, "-e", script], &:read)
  eval(out) # rubocop:disable Security/Eval -- our own child's Hash#inspect
end

Dir.mktmpdir("loadout-bench-cc") do |tmp|
  scenarios = {
    plain: :plain, bootsnap_warm: :bootsnap, bootsnap_ci: :bootsnap, bootsnap_ci_reval: :bootsnap_reval,
    loadout_cold: :loadout, loadout_warm: :loadout, loadout_ci: :loadout
  }
  scenarios.delete(:bootsnap_ci_reval) unless BOOTSNAP_PATHS.any?
  %i[bootsnap_warm bootsnap_ci].each { |s| scenarios.delete(s) } if BOOTSNAP_PATHS.empty?
  warn "bench compile_cache: #{FILES} Ruby files (#{METHODS} methods each), #{YAML_FILES} YAML files, " \
       "#{ROUNDS} rounds; writing apps..."
  master = File.join(tmp, "master")
  Loadout::Bench::CompileApp.write(master, files: FILES, yaml: YAML_FILES, methods: METHODS)
  apps = scenarios.keys.to_h do |name|
    app = File.join(tmp, name.to_s, "app")
    FileUtils.mkdir_p(File.dirname(app))
    system("cp", "-r", master, app, exception: true)
    [name, app]
  end
  caches = scenarios.keys.to_h do |name|
    [name, File.join(tmp, name.to_s, name.to_s.start_with?("bootsnap") ? "bootsnap" : "loadout.store")]
  end
  # Ctimes of freshly written files are within the racy window: age the app before caching it.
  sleep 2.1
  # Warm-up: fill the caches (a cold boot, then a boot that settles revalidation).
  scenarios.each do |name, kind|
    next if name == :plain || name == :loadout_cold

    (name.to_s.end_with?("warm") ? 2 : 1).times { run(command(kind, apps[name], caches[name])) }
  end

  samples = Hash.new { |h, k| h[k] = [] }
  ROUNDS.times do |round|
    scenarios.keys.rotate(round).each do |name|
      app = apps[name]
      cache = caches[name]
      case name
      when :loadout_cold then FileUtils.rm_rf(Dir.glob("#{cache}*"))
      when :bootsnap_ci, :bootsnap_ci_reval, :loadout_ci then touch_all(app, Time.now - (3600 * (round + 1)))
      end
      samples[name] << run(command(scenarios[name], app, cache))
    end
    warn "  round #{round + 1}/#{ROUNDS}: " + samples.map { |n, v| "#{n}=#{format("%.2f", v.last)}s" }.join(" ")
  end

  med = samples.transform_values { |v| Bench.median(v) }
  rows = med.map do |name, m|
    [name, format("%.3f", m), format("%.2fx", m / med[:plain]),
     med[:bootsnap_warm] ? format("%.2fx", m / med[:bootsnap_warm]) : "-", format("%.2fx", m / med[:loadout_warm])]
  end
  puts Bench.table(rows, ["scenario", "median s", "vs plain", "vs bootsnap warm", "vs loadout warm"])
  puts
  split = cost_split(apps[:loadout_warm], caches[:loadout_warm])
  puts "loadout warm cost split over #{FILES} ISeqs (ms, measured in one process): " +
       split.map { |k, v| "#{k}=#{format("%.1f", v)}" }.join(", ")
  # Scenarios of one round ran seconds apart: the median of per-round ratios is less exposed to a
  # machine whose speed drifts between rounds than the ratio of medians.
  paired = lambda do |a, b|
    next Float::NAN unless samples.key?(a) && samples.key?(b)

    Bench.median(samples[a].zip(samples[b]).map { |x, y| x / y })
  end
  puts "targets: warm <= 0.8x bootsnap warm " \
       "(#{format("%.2f", med[:loadout_warm] / (med[:bootsnap_warm] || Float::NAN))}x), " \
       "ci <= 1.2x loadout warm (#{format("%.2f", med[:loadout_ci] / med[:loadout_warm])}x), " \
       "cold <= 1.0x plain (#{format("%.2f", med[:loadout_cold] / med[:plain])}x)"
  puts "same targets, median of per-round ratios: warm #{format("%.2f", paired.(:loadout_warm, :bootsnap_warm))}x, " \
       "ci #{format("%.2f", paired.(:loadout_ci, :loadout_warm))}x, " \
       "cold #{format("%.2f", paired.(:loadout_cold, :plain))}x"
  fmt = ->(k) { med[k] ? format("%.3f", med[k]) : "NA" }
  puts "bench compile_cache: plain_s=#{fmt.(:plain)} bootsnap_warm_s=#{fmt.(:bootsnap_warm)} " \
       "bootsnap_ci_s=#{fmt.(:bootsnap_ci)} " \
       "loadout_cold_s=#{fmt.(:loadout_cold)} loadout_warm_s=#{fmt.(:loadout_warm)} loadout_ci_s=#{fmt.(:loadout_ci)}"
end

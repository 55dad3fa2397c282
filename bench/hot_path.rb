# frozen_string_literal: true

# Counts what a boot of a generated app costs in the two numbers that do not drift on a busy
# machine: instructions (valgrind --tool=callgrind) and objects allocated (GC.stat at exit, after
# loadout's own exit work). Wall time is bench/boot.rb's job; this is for comparing two versions
# of lib/ (LIB=...) on the same app, warm and "ci" (every mtime moved, store kept).
#
#   ruby bench/boot.rb --small                     # generates tmp/bench/app-s1-g40-f300-y20 once
#   ruby bench/hot_path.rb [APP_DIR] [--lib DIR] [--rounds N] [--no-callgrind]
#   ruby bench/hot_path.rb --compile-app 2000 [--lib DIR]   # bench/compile_cache.rb's app (compile caches only)
#
# Prints one line per scenario: objects (median of N boots) and instructions (one callgrind boot).
require "optparse"
require "rbconfig"
require "fileutils"
require "tmpdir"
require_relative "support/harness"
require_relative "support/compile_app"

ROOT = File.expand_path("..", __dir__)
opts = { lib: File.join(ROOT, "lib"), rounds: 5, callgrind: true, compile_app: nil }
OptionParser.new do |o|
  o.banner = "Usage: ruby bench/hot_path.rb [APP_DIR] [options]"
  o.on("--lib DIR", "loadout's lib dir to measure (default: this checkout's)") { |v| opts[:lib] = File.expand_path(v) }
  o.on("--rounds N", Integer, "boots per scenario for the object count (default 5)") { |v| opts[:rounds] = v }
  o.on("--no-callgrind", "skip the instruction count") { opts[:callgrind] = false }
  o.on("--compile-app N", Integer, "bench/compile_cache.rb's app with N Ruby files (N/15 YAML files)") do |v|
    opts[:compile_app] = v
  end
end.parse!(ARGV)
if opts[:compile_app]
  app = File.join(ROOT, "tmp/bench/compile-app-f#{opts[:compile_app]}")
  unless File.file?(File.join(app, ".complete"))
    Loadout::Bench::CompileApp.write(app, files: opts[:compile_app], yaml: opts[:compile_app] / 15)
    File.write(File.join(app, ".complete"), "")
  end
else
  app = File.expand_path(ARGV[0] || File.join(ROOT, "tmp/bench/app-s1-g40-f300-y20"))
end
unless File.file?(File.join(app, "boot.rb"))
  abort "bench hot_path: no app at #{app} (run ruby bench/boot.rb --small first)"
end

Dir.mktmpdir("loadout-hot-path") do |tmp|
  cache = File.join(tmp, "cache")
  probe = File.join(tmp, "probe.rb")
  # Registered before loadout's setup, so it runs after loadout's exit sequence: everything counts.
  File.write(probe, <<~RUBY)
    at_exit { $stderr.puts "hot_path objects=\#{GC.stat(:total_allocated_objects)} gc=\#{GC.count}" }
  RUBY
  env = ENV.keys.grep(/\A(BUNDLE|RUBYOPT|RUBYLIB|LOADOUT_|BOOTSNAP_)/).to_h { |k| [k, nil] }
           .merge("BENCH_MODE" => "loadout", "BENCH_CACHE" => cache, "LOADOUT_PURE" => ENV["LOADOUT_PURE"])
  # The generated app's boot.rb sets loadout up itself (BENCH_MODE); compile_cache.rb's app is
  # booted with the compile caches alone, as that bench does.
  command = if opts[:compile_app]
              store = File.join(cache, "store").dump
              prelude = "require 'loadout'; require 'loadout/store'; require 'loadout/compile_cache'\n" \
                        "Loadout::CompileCache.install!(store: Loadout::Store.open(#{store}, " \
                        "fail_safe: true, defer_writes: true), roots: [#{app.dump}])\n" \
                        "at_exit { Loadout::CompileCache.finish! }\n"
              ["-I", opts[:lib], *Bench.gem_paths("msgpack").flat_map { |p| ["-I", p] }, "-r", probe, "-e",
               "#{prelude}load #{File.join(app, "boot.rb").dump}"]
            else
              ["-I", opts[:lib], "-r", probe, "boot.rb"]
            end
  FileUtils.mkdir_p(cache)
  boot = lambda do |prefix = []|
    out = IO.popen(env, [*prefix, RbConfig.ruby, *command, { chdir: app, err: %i[child out] }], &:read)
    raise "boot failed:\n#{out}" unless $?.success?

    out
  end
  touch = lambda do |stamp|
    Dir.glob(File.join(app, "{gems,gemhome,app,config,lib}/**/*.{rb,yml,json}"))
       .each { |f| File.utime(stamp, stamp, f) }
  end
  median = ->(a) { a.sort[a.size / 2] }
  stamp = Time.now - 3600

  touch.call(stamp)
  2.times { boot.call } # cold, then the boot that rewrites what the cold one could not
  sleep 2.1 # past the racy window of the entries just written
  results = {}
  %w[warm ci].each do |scenario|
    objects = Array.new(opts[:rounds]) do
      if scenario == "ci"
        touch.call(stamp += 60)
        saved = File.join(tmp, "store.ci")
        FileUtils.cp(File.join(cache, "store"), saved) unless File.exist?(saved)
        FileUtils.cp(File.join(tmp, "store.ci"), File.join(cache, "store"))
        FileUtils.rm_f(File.join(cache, "store.hint"))
      end
      out = boot.call
      $stderr.puts "  #{scenario}: #{out[/hot_path objects=\d+ gc=\d+/]}" if ENV["VERBOSE"]
      out[/hot_path objects=(\d+)/, 1].to_i
    end
    instructions = nil
    if opts[:callgrind]
      if scenario == "ci"
        touch.call(stamp += 60)
        FileUtils.cp(File.join(tmp, "store.ci"), File.join(cache, "store"))
        FileUtils.rm_f(File.join(cache, "store.hint"))
      end
      out = boot.call(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"])
      instructions = out[/Collected\s*:\s*(\d+)/, 1]&.to_i
    end
    results[scenario] = [median.call(objects), instructions]
    puts format("hot_path %-4s objects=%d instructions=%s (lib %s)", scenario, results[scenario][0],
                instructions || "n/a", opts[:lib])
  end
end

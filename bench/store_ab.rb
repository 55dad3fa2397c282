# frozen_string_literal: true

# Two versions of Loadout::Store side by side (interleaved rounds, medians of CPU time, which a
# busy machine disturbs far less than wall time): open with the hint (6,300 values of 7 KB),
# a get that hits, a put, and the compaction of that store with 10% of it overwritten.
#
#   ruby bench/store_ab.rb OLD_LIB NEW_LIB [ROUNDS]   # e.g. a checkout of main's lib/ and ./lib
#
# Each round runs one child Ruby per version; each version keeps its own store (hint formats
# differ between versions).

require "open3"
require "rbconfig"
require "tmpdir"

CHILD = <<~'RUBY'
  require "loadout"
  require "loadout/store"
  require "fileutils"
  dir = ARGV[0]
  cpu = -> { Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) }
  store = File.join(dir, "big.store")
  unless File.exist?(store)
    rng = Random.new(1)
    Loadout::Store.open(store, defer_writes: true) do |s|
      6300.times { |i| s.put("lib/gem-#{i % 60}/file_#{i}.rb", rng.bytes(7150)) }
    end
  end
  Loadout::Store.open(store, readonly: true).close
  t0 = cpu.()
  20.times { Loadout::Store.open(store, readonly: true).close }
  open_ms = (cpu.() - t0) * 1000 / 20
  s = Loadout::Store.open(store, readonly: true)
  keys = Array.new(2000) { |i| "lib/gem-#{(i * 3) % 60}/file_#{i * 3}.rb".b }
  keys.each { |k| s.get(k) }
  t0 = cpu.()
  keys.each { |k| s.get(k) }
  get_us = (cpu.() - t0) * 1e6 / keys.size
  s.close
  small = File.join(dir, "small.store")
  FileUtils.rm_f([small, "#{small}.hint"])
  value = ("v" * 300).b
  w = Loadout::Store.open(small)
  t0 = cpu.()
  2000.times { |i| w.put("k#{i}".b, value) }
  put_us = (cpu.() - t0) * 1e6 / 2000
  w.close
  copy = File.join(dir, "compact.store")
  FileUtils.cp(store, copy)
  FileUtils.rm_f("#{copy}.hint")
  rng = Random.new(2)
  Loadout::Store.open(copy, defer_writes: true) do |x|
    630.times { |i| x.put("lib/gem-#{i % 60}/file_#{i}.rb", rng.bytes(7150)) }
  end
  x = Loadout::Store.open(copy)
  t0 = cpu.()
  x.compact
  compact_ms = (cpu.() - t0) * 1000
  x.close
  FileUtils.rm_f([copy, "#{copy}.hint"])
  puts [open_ms, get_us, put_us, compact_ms].join(" ")
RUBY

old_lib, new_lib, rounds = ARGV
abort "usage: ruby bench/store_ab.rb OLD_LIB NEW_LIB [ROUNDS]" unless old_lib && new_lib
rounds = Integer(rounds || 9)
labels = %w[open_with_hint_ms get_hit_us put_us compact_ms]
results = { old_lib => [], new_lib => [] }
Dir.mktmpdir("loadout-store-ab") do |tmp|
  child = File.join(tmp, "child.rb")
  File.write(child, CHILD)
  rounds.times do
    results.each_key.with_index do |lib, i|
      dir = File.join(tmp, "v#{i}")
      Dir.mkdir(dir) unless Dir.exist?(dir)
      out, err, status = Open3.capture3(RbConfig.ruby, "-I", File.expand_path(lib), child, dir)
      abort "#{lib}: #{err}" unless status.success?
      results[lib] << out.split.map(&:to_f)
    end
  end
end
median = ->(list) { list.sort[list.size / 2] }
medians = results.transform_values { |rows| labels.each_index.map { |i| median.(rows.map { |r| r[i] }) } }
results.each_key { |lib| puts "#{lib}: #{labels.zip(medians[lib]).map { |l, v| "#{l}=#{v.round(3)}" }.join(" ")}" }
ratios = labels.each_index.map { |i| "#{labels[i]} #{(medians[new_lib][i] / medians[old_lib][i]).round(2)}x" }
puts "new/old: #{ratios.join(", ")}"
puts "(#{rounds} rounds, CPU time medians, #{RUBY_DESCRIPTION})"

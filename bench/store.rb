# frozen_string_literal: true

# Store and Journal figures (issue 3), side by side in one run, interleaved rounds, medians.
#
#   ruby -Ilib bench/store.rb                 # ~1-2 minutes
#   ROUNDS=3 VALUES=6300 VALUE_BYTES=7150 ruby -Ilib bench/store.rb
#   LOADOUT_PURE=1 ruby -Ilib bench/store.rb  # the Ruby twins (much slower CRC)
#
# Appends: 200-byte records through Loadout::Journal in each sync mode (time-boxed per round);
# :batch runs 4 appending threads (group commit shares their syncs). The baseline is the seed-004
# style log: one text line per entry, "%08x" Zlib.crc32 + ":add:<id>:0:" + Marshal.dump(payload).dump,
# written through Ruby's buffered IO. Open: Store.open of VALUES values (~45 MB) with the hint,
# and with the hint moved away (full scan, every CRC checked); first get right after open.
# Compaction: a copy of that store with 10% of its values overwritten.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "loadout"
require "tmpdir"
require "fileutils"
require "zlib"

$stdout.sync = true
ROUNDS = Integer(ENV.fetch("ROUNDS", "5"))
VALUES = Integer(ENV.fetch("VALUES", "6300"))
VALUE_BYTES = Integer(ENV.fetch("VALUE_BYTES", "7150"))
SLICE = Float(ENV.fetch("SLICE", "0.4")) # seconds per append measurement

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def median(list)
  s = list.sort
  s.size.odd? ? s[s.size / 2] : (s[(s.size / 2) - 1] + s[s.size / 2]) / 2.0
end

# Appends for SLICE seconds; returns appends per second (close included).
def journal_rate(dir, mode)
  FileUtils.rm_rf(dir)
  payload = ("p" * 200).b
  j = Loadout::Journal.open(dir, sync: mode)
  n = 0
  t0 = now
  deadline = t0 + SLICE
  if mode == :batch
    threads = Array.new(4) do
      Thread.new do
        c = 0
        while now < deadline
          j.append(payload)
          c += 1
        end
        c
      end
    end
    n = threads.sum(&:value)
  else
    while now < deadline
      1000.times { j.append(payload) }
      n += 1000
      break if mode == :fsync # fsync: check the clock more often
    end
    while mode == :fsync && now < deadline
      j.append(payload)
      n += 1
    end
  end
  j.close
  n / (now - t0)
end

def baseline_rate(path)
  File.unlink(path) if File.exist?(path)
  payload = ("p" * 200).b
  n = 0
  t0 = now
  deadline = t0 + SLICE
  File.open(path, "ab") do |f|
    while now < deadline
      1000.times do
        n += 1
        body = "add:#{n}:0:#{Marshal.dump(payload).dump}"
        f.write(format("%08x", Zlib.crc32(body)), ":", body, "\n")
      end
    end
  end
  n / (now - t0)
end

def build_store(path)
  rng = Random.new(1)
  Loadout::Store.open(path, defer_writes: true) do |s|
    VALUES.times { |i| s.put("lib/gem-#{i % 60}/file_#{i}.rb", rng.bytes(VALUE_BYTES)) }
  end
end

def open_ms(path, hint:)
  hint_path = "#{path}.hint"
  File.rename(hint_path, "#{hint_path}.off") unless hint
  t0 = now
  s = Loadout::Store.open(path, readonly: true)
  t1 = now
  v = s.get("lib/gem-7/file_4567.rb") || s.get("lib/gem-0/file_0.rb")
  t2 = now
  raise "bench store is broken" unless v && v.bytesize == VALUE_BYTES

  s.close
  [(t1 - t0) * 1000, (t2 - t1) * 1_000_000]
ensure
  File.rename("#{hint_path}.off", hint_path) unless hint
end

def compact_ms(base, dir)
  path = File.join(dir, "compact.store")
  FileUtils.cp(base, path)
  rng = Random.new(2)
  Loadout::Store.open(path, defer_writes: true) do |s|
    (VALUES / 10).times { |i| s.put("lib/gem-#{i % 60}/file_#{i}.rb", rng.bytes(VALUE_BYTES)) }
  end
  s = Loadout::Store.open(path)
  t0 = now
  s.compact
  t = (now - t0) * 1000
  s.close
  FileUtils.rm_f([path, "#{path}.hint"])
  t
end

results = Hash.new { |h, k| h[k] = [] }
Dir.mktmpdir("loadout-bench", ENV.fetch("BENCH_DIR", Dir.tmpdir)) do |dir|
  store = File.join(dir, "big.store")
  t0 = now
  build_store(store)
  puts format("backend=%s crc32c=%s; built %d values, %.1f MB in %.2fs", Loadout::BACKEND,
              Loadout::BACKEND == :native && Loadout::Native.store_crc32c_hardware? ? "sse4.2" : "table",
              VALUES, File.size(store) / 1e6, now - t0)
  Loadout::Store.open(store, readonly: true) { |s| raise "built store incomplete" unless s.size == VALUES }

  ROUNDS.times do |round|
    %i[none flush fsync batch].each { |m| results[m] << journal_rate(File.join(dir, "j-#{m}"), m) }
    results[:baseline] << baseline_rate(File.join(dir, "baseline.log"))
    hint_open, hint_get = open_ms(store, hint: true)
    scan_open, scan_get = open_ms(store, hint: false)
    results[:open_hint] << hint_open
    results[:first_get_hint_us] << hint_get
    results[:open_scan] << scan_open
    results[:first_get_scan_us] << scan_get
    results[:compact] << compact_ms(store, dir)
    puts format("round %d: none=%.0f flush=%.0f fsync=%.0f batch=%.0f baseline=%.0f open_hint=%.2fms " \
                "open_scan=%.1fms compact=%.0fms",
                round + 1, results[:none].last, results[:flush].last, results[:fsync].last, results[:batch].last,
                results[:baseline].last, hint_open, scan_open, results[:compact].last)
  end
end

m = results.transform_values { |v| median(v) }
puts format("appends/s (200 B): none %.0f  flush %.0f  fsync %.0f  batch(4 threads) %.0f  baseline %.0f",
            m[:none], m[:flush], m[:fsync], m[:batch], m[:baseline])
puts format("ratios: none/baseline %.2fx  flush/baseline %.2fx  batch/fsync %.2fx",
            m[:none] / m[:baseline], m[:flush] / m[:baseline], m[:batch] / m[:fsync])
puts format("open %d values: with hint %.2f ms (first get %.0f us), without hint %.1f ms (first get %.0f us); " \
            "scan/hint %.0fx", VALUES, m[:open_hint], m[:first_get_hint_us], m[:open_scan], m[:first_get_scan_us],
            m[:open_scan] / m[:open_hint])
puts format("compaction of %d values (10%% garbage): %.0f ms", VALUES, m[:compact])
puts format("target: none >= 1,000,000/s: %s; open with hint <= 5 ms: %s",
            m[:none] >= 1_000_000 ? "met" : "NOT met", m[:open_hint] <= 5 ? "met" : "NOT met")
puts format("bench store: none_per_s=%d flush_per_s=%d fsync_per_s=%d batch_per_s=%d open_hint_ms=%.2f " \
            "open_scan_ms=%.1f compact_ms=%d baseline_per_s=%d",
            m[:none], m[:flush], m[:fsync], m[:batch], m[:open_hint], m[:open_scan], m[:compact], m[:baseline])

# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"
require "support/store_crash"

# The hint names the log it was written for, by what another log cannot share (its log id, the
# record that ends what it covers, its inode or, for a copy, its end), and what a torn-tail cut
# or a compaction drops is decided by the log alone. A stale hint used to be accepted for another
# log (it matched by its covered length and a CRC of the 64 bytes before it, which repeat between
# records): keys read as missing, the next writer cut valid records as a "torn tail", and
# compaction dropped them for good.
class StoreHintTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers

  # Values whose last bytes are alike, as padding and the ISeqs of similar files are.
  def value(key)
    "#{key}:" + ("x" * 400)
  end

  def assert_all_there(path, keys)
    lost = Loadout::Store.open(path) { |s| keys.reject { |k| s.get(k) == value(k) } }
    assert_empty lost, "#{lost.size} of #{keys.size} keys lost"
  end

  test "(a) no crash: the process closing last, with the file another one compacted away, does not mislead the next" do
    with_files do |dir|
      path = File.join(dir, "store")
      keys = Array.new(100) { |i| "k#{i}" }
      Loadout::Store.open(path) do |s|
        keys.each { |k| s.put(k, value(k)) }
        keys.first(30).each { |k| s.put(k, value(k)) } # garbage, so compaction shrinks the file
      end
      b = Loadout::Store.open(path) # B opens and puts...
      b.put("b1", value("b1"))
      Loadout::Store.open(path) do |a| # ...A compacts, appends, closes...
        a.compact
        60.times { |i| a.put("a#{i}", value("a#{i}")) }
      end
      b.close # ...B closes last, with the file A renamed away
      keys += ["b1"] + Array.new(60) { |i| "a#{i}" }
      Loadout::Store.open(path) do |c| # the next writer appends (cutting any "torn tail") and compacts
        c.put("c1", value("c1"))
        c.compact
      end
      assert_all_there(path, keys + ["c1"])
    end
  end

  test "(b) the hint a compaction killed between its rename and its hint write leaves is not trusted" do
    with_files do |dir|
      path = File.join(dir, "store")
      keys = Array.new(200) { |i| "k#{i}" }
      Loadout::Store.open(path) do |s|
        keys.each { |k| s.put(k, value(k)) }
        keys.first(40).each { |k| s.put(k, value(k)) }
      end
      stale = File.binread("#{path}.hint")
      # What the kill leaves: the compacted log, the hint of the log before it. (Other
      # processes go on appending to the new log.)
      Loadout::Store.open(path) do |s|
        s.compact
        100.times { |i| s.put("n#{i}", value("n#{i}")) }
      end
      File.binwrite("#{path}.hint", stale)
      keys += Array.new(100) { |i| "n#{i}" }
      Loadout::Store.open(path) do |s|
        s.put("z", value("z"))
        s.compact
      end
      assert_all_there(path, keys + ["z"])
    end
  end

  test "a hint for another log, a cut-and-regrown log, or a copy that grew apart is not used" do
    with_files do |dir|
      path = File.join(dir, "store")
      Loadout::Store.open(path) { |s| 50.times { |i| s.put("k#{i}", value("k#{i}")) } }
      hint_end = ->(p) { Loadout::Store.open(p, readonly: true) { |s| s.instance_variable_get(:@hint_end) } }
      assert_equal File.size(path), hint_end.(path), "the hint of the log itself is used"

      # The same bytes under a new inode (a copy): used while the copy ends where the hint does.
      copy = File.join(dir, "copy")
      File.binwrite(copy, File.binread(path))
      File.binwrite("#{copy}.hint", File.binread("#{path}.hint"))
      File.chmod(0o600, copy, "#{copy}.hint")
      assert_equal File.size(copy), hint_end.(copy)
      File.open(copy, "ab") { |f| f.write(Loadout::Store.const_get(:Format).frame_into(+"".b, 0, "x", "y")) }
      assert_equal(-1, hint_end.(copy), "a copy with other records after the covered end: another log")

      # Another log: same records, same length, another log id.
      other = File.join(dir, "other")
      Loadout::Store.open(other) { |s| 50.times { |i| s.put("k#{i}", value("k#{i}")) } }
      assert_equal File.size(path), File.size(other)
      File.binwrite("#{other}.hint", File.binread("#{path}.hint"))
      assert_equal(-1, hint_end.(other))

      # The same log cut below the hint's end and grown back past it with other records.
      hint = File.binread("#{path}.hint")
      size = File.size(path)
      File.truncate(path, size - 300)
      Loadout::Store.open(path) { |s| s.put("regrown", "r" * 1000) }
      File.binwrite("#{path}.hint", hint)
      assert_operator File.size(path), :>, size
      assert_equal(-1, hint_end.(path))
      Loadout::Store.open(path) { |s| assert_equal "r" * 1000, s.get("regrown") }
    end
  end

  # Whatever the map says (from a hint, or wrong for any other reason), a torn-tail cut and a
  # compaction go by the log: a map that starts reading in the middle of a record, or that lacks
  # keys, costs reads, never records.
  test "a torn-tail cut and a compaction never drop a record the map does not know of" do
    with_files do |dir|
      path = File.join(dir, "store")
      Loadout::Store.open(path) { |s| 20.times { |i| s.put("k#{i}", value("k#{i}")) } }
      store = Loadout::Store.open(path)
      # A map that covers less than the file and ends in the middle of the last record: as if
      # read from a hint that names the wrong place.
      store.instance_variable_set(:@map, Loadout::Store.const_get(:KeyMap).new)
      store.instance_variable_set(:@end, File.size(path) - 100)
      store.put("new", value("new"))
      store.compact
      store.close
      assert_all_there(path, Array.new(20) { |i| "k#{i}" } + ["new"])
    end
  end

  test "compaction parses the log window by window: records and damage larger than a window lose nothing" do
    with_files do |dir|
      path = File.join(dir, "store")
      big = Array.new(6) { |i| ["big#{i}", ("b#{i}" * 3000)] } # 9 KB records
      small = Array.new(40) { |i| ["s#{i}", value("s#{i}")] }
      Loadout::Store.open(path) do |s|
        (big + small).each { |k, v| s.put(k, v) }
        s.put("s0", value("s0")) # garbage
      end
      # A damaged stretch of 9 KB in the middle: the records it covers are gone, the rest stay.
      log = File.binread(path)
      damaged_from = log.index("s10".b) - 100
      File.open(path, "r+b") { |f| f.pwrite("\0" * 9000, damaged_from) }
      format = Loadout::Store.const_get(:Format)
      ranges = format.parse(log, 0)[0].each_slice(4).to_h { |_, key, off, len| [key, off...(off + len)] }
      survivors = (big + small).select do |k, _|
        range = ranges.fetch(k.b)
        range.end <= damaged_from || range.begin >= damaged_from + 9000
      end
      store = Loadout::Store.open(path)
      store.instance_variable_get(:@compaction).instance_variable_set(:@window, 4096)
      assert store.compact
      store.close
      Loadout::Store.open(path) do |s|
        survivors.each { |k, v| assert_equal v, s.get(k), k }
        assert survivors.any? { |k, _| ranges[k.b].begin >= damaged_from + 9000 }, "records after the damage"
        assert survivors.any? { |k, _| k.start_with?("big") }, "records larger than a window"
        assert_equal 0, s.stats[:corrupt_records], "the damage is not copied"
      end
    end
  end

  # The trials: >= 200 per backend in the suite (60 + 80 + 60), LOADOUT_STRESS_TRIALS (or `rake
  # stress`) for more. Every put acknowledged in a file is checked after every trial on it, so a
  # record a later open or compaction loses counts too. Values end alike (uniform), as the ISeqs
  # of similar files do: the bytes before any record's end look the same.
  TRIALS = ENV["LOADOUT_STRESS_TRIALS"]&.then { |n| Integer(n) }

  def trials(default)
    TRIALS || default
  end

  test "kill -9 right after a compaction's rename, before its hint write, while another process appends" do
    with_files do |dir|
      report = Loadout::TestSupport::StoreCrash.new(dir, mode: :rename_kill, trials: trials(60), writers: 2,
                                                         per_file: 5, uniform: true, compact_every: 10,
                                                         kill_within: 0.03).run
      puts "\nrename kill -9: #{report}" if TRIALS
      assert report.ok?, report.to_s
      assert_operator report.trials, :>=, trials(60)
    end
  end

  test "kill -9 around compaction and close, with hints left behind: no put that returned is lost" do
    with_files do |dir|
      report = Loadout::TestSupport::StoreCrash.new(dir, mode: :churn, trials: trials(80), writers: 3, per_file: 5,
                                                         uniform: true, kill_within: 0.05).run
      puts "\nchurn kill -9: #{report}" if TRIALS
      assert report.ok?, report.to_s
      assert_operator report.trials, :>=, trials(80)
    end
  end

  test "processes that open, put, compact and close at once (no crash): no put that returned is lost" do
    with_files do |dir|
      report = Loadout::TestSupport::StoreCrash.new(dir, mode: :churn, trials: trials(60), writers: 3, per_file: 3,
                                                         uniform: true, kill: false, max_puts: 40, rounds: 3).run
      puts "\nchurn: #{report}" if TRIALS
      assert report.ok?, report.to_s
      assert_operator report.acked, :>=, trials(60) * 20, "the harness must not pass vacuously: #{report}"
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "stringio"
require "tmpdir"
require "loadout/stats"

class StatsTest < Minitest::Test
  def setup
    Loadout::Stats.reset!
    @saved = Loadout::Instrumentation.subscriber
  end

  def teardown
    Loadout::Instrumentation.subscriber = @saved
    Loadout::Stats.reset!
  end

  # A clock that advances only when told to.
  def with_fake_clock
    now = 0.0
    stats = Loadout::Stats.singleton_class
    stats.alias_method(:__real_clock, :clock)
    stats.remove_method(:clock) # (removed first: redefining it in place warns under -w)
    stats.define_method(:clock) { now }
    yield ->(seconds) { now += seconds }
  ensure
    stats.remove_method(:clock)
    stats.alias_method(:clock, :__real_clock)
    stats.remove_method(:__real_clock)
  end

  test "self time excludes nested requires; failures and already-loaded features are counted apart" do
    with_fake_clock do |tick|
      Loadout::Stats.__time_require("outer") do
        tick.(0.010)
        Loadout::Stats.__time_require("inner") { tick.(0.100); true }
        # already loaded (a failed nested require below counts as nested time too)
        Loadout::Stats.__time_require("inner") { false }
        assert_raises(LoadError) { Loadout::Stats.__time_require("missing") { tick.(0.001); raise LoadError } }
        tick.(0.005)
        true
      end
    end
    times = Loadout::Stats.timings.to_h { |t, f| [f, t.round(6)] }
    assert_equal({ "inner" => 0.1, "outer" => 0.015 }, times)
    assert_equal({ calls: 4, loaded: 2, failed: 1 }, Loadout::Stats.requires)
  end

  # On JRuby Boot turns the index and the ISeq cache off on every boot; the words for it belong to
  # the report, which a boot without LOADOUT_STATS never loads (24 ms of JRuby's setup).
  test "a component Boot turns off loads no Stats unless LOADOUT_STATS asks; with it the report says why" do
    script = <<~'RUBY'
      require "loadout"
      Loadout::Boot.singleton_class.prepend(Module.new do
        def unsupported(part)
          part == :load_path ? "said by the test" : super
        end
      end)
      Loadout.setup(cache_dir: ARGV[0], stats: ARGV[1] == "1")
      print $LOADED_FEATURES.grep(%r{/loadout/stats(/|\.rb)}).size
    RUBY
    Dir.mktmpdir("loadout-stats-off") do |dir|
      quiet = run_ruby!(script, args: [File.join(dir, "c1"), "0"], env: { "LOADOUT_STATS" => nil })
      assert_equal "0", quiet.stdout
      assert_empty quiet.stderr
      watched = run_ruby!(script, args: [File.join(dir, "c2"), "1"], env: { "LOADOUT_STATS" => nil })
      refute_equal "0", watched.stdout
      assert_match(/^\s*load_path:\s+off \(said by the test\)$/, watched.stderr)
    end
  end

  test "the report lists the slowest requires by self time, at most 10" do
    with_fake_clock do |tick|
      12.times { |i| Loadout::Stats.__time_require("f#{i}") { tick.(0.001 * (i + 1)); true } }
    end
    lines = Loadout::Stats.report_lines
    top = lines.grep(/ ms  f\d+\z/)
    assert_equal 10, top.size
    assert_match(/12\.00 ms  f11\z/, top.first)
    assert_match(/3\.00 ms  f2\z/, top.last)
    assert_includes lines, "  requires:           12 calls, 12 loaded, 0 raised"
  end

  test "events are counted per cache and event, with bytes read" do
    Loadout::Stats.count(:hit, "/a.rb", cache: :iseq, bytes: 100)
    Loadout::Stats.count(:hit, "/b.rb", cache: :iseq, bytes: 50)
    Loadout::Stats.count(:miss, "/c.rb", cache: :iseq)
    Loadout::Stats.count(:stale, "/c.yml", cache: :yaml, reason: :mtime)
    lines = Loadout::Stats.report_lines
    assert_includes lines, "  iseq events:        hit=2 miss=1"
    assert_includes lines, "  yaml events:        stale=1"
    # Components installed by earlier tests in this process report their own bytes too.
    component = Loadout::Stats.send(:component_stats).sum do |_, stats|
      stats.values.sum { |v| v.is_a?(Hash) && v[:bytes_read].is_a?(Integer) ? v[:bytes_read] : 0 }
    end
    assert_includes lines, "  bytes read:         #{150 + component}"
  end

  test "log! prints every event and keeps an existing subscriber" do
    seen = []
    Loadout.instrumentation = ->(event, path, **info) { seen << [event, path, info] }
    io = StringIO.new
    Loadout.log!(io)
    Loadout::Instrumentation.emit(:miss, "/app/x.rb", cache: :iseq, reason: :mtime)
    assert_equal "loadout: iseq miss /app/x.rb reason=mtime\n", io.string
    assert_equal [[:miss, "/app/x.rb", { cache: :iseq, reason: :mtime }]], seen
  end

  test "the last boot's numbers round-trip through the file beside the store" do
    with_files do |dir|
      store = File.join(dir, "store")
      data = { "at" => 5, "pid" => 7, "program" => "bin/rails server\nx", "wrote" => false, "setup_ms" => 1.25,
               "load_path" => { "hits" => 3, "restored" => true },
               "compile_cache" => { "iseq" => { "reasons" => { "mtime" => 2 } } } }
      assert Loadout::LastBoot.write(Loadout::Trust::DirHandle.open(dir, false), "store", data)
      assert_equal({ "at" => 5, "pid" => 7, "program" => "bin/rails server x", "wrote" => false, "setup_ms" => 1.25,
                     "load_path.hits" => 3, "load_path.restored" => true, "compile_cache.iseq.reasons.mtime" => 2 },
                   Loadout::LastBoot.read(store))
      assert_equal 0o600, File.stat("#{store}.last-boot").mode & 0o777
      assert_equal ["store.last-boot"], Dir.children(dir)
    end
  end

  test "a last-boot file that is not ours, or torn by a concurrent write, reads as none" do
    with_files([["store.last-boot", "\x04\bgarbage"]]) do |dir|
      store = File.join(dir, "store")
      assert_nil Loadout::LastBoot.read(store)
      first = Loadout::LastBoot.dump({ "pid" => 1, "program" => "a" * 3000 }, "aaaa")
      second = Loadout::LastBoot.dump({ "pid" => 2, "program" => "b" * 3000 }, "bbbb")
      assert_equal [Loadout::LastBoot::SIZE] * 2, [first.bytesize, second.bytesize]
      File.binwrite("#{store}.last-boot", first.byteslice(0, 2048) + second.byteslice(2048..))
      assert_nil Loadout::LastBoot.read(store)
      File.binwrite("#{store}.last-boot", second)
      assert_equal 2, Loadout::LastBoot.read(store)["pid"]
    end
  end

  test "the last-boot file is overwritten in place, never through a symlink or a hard link" do
    with_files([["victim", "keep"]]) do |dir|
      store = File.join(dir, "store")
      handle = Loadout::Trust::DirHandle.open(dir, false)
      File.symlink(File.join(dir, "victim"), "#{store}.last-boot")
      refute Loadout::LastBoot.write(handle, "store", { "pid" => 1 })
      File.delete("#{store}.last-boot")
      File.link(File.join(dir, "victim"), "#{store}.last-boot")
      refute Loadout::LastBoot.write(handle, "store", { "pid" => 1 })
      assert_equal "keep", File.read(File.join(dir, "victim"))
      File.delete("#{store}.last-boot")
      assert Loadout::LastBoot.write(handle, "store", { "pid" => 1, "program" => "long" * 300 })
      ino = File.stat("#{store}.last-boot").ino
      assert Loadout::LastBoot.write(handle, "store", { "pid" => 2 })
      last_boot = "#{store}.last-boot"
      assert_equal [ino, Loadout::LastBoot::SIZE], [File.stat(last_boot).ino, File.size(last_boot)]
      assert_equal({ "pid" => 2 }, Loadout::LastBoot.read(store))
    end
  end

  test "a record too long for the block keeps its first lines whole" do
    data = { "pid" => 3 }.merge((1..400).to_h { |i| ["reason#{i}", i] })
    record = Loadout::LastBoot.dump(data, "n")
    assert_equal Loadout::LastBoot::SIZE, record.bytesize
    parsed = Loadout::LastBoot.parse(record)
    assert_equal 3, parsed["pid"]
    assert_operator parsed.size, :>, 100
    assert_equal (1..(parsed.size - 1)).map { |i| "reason#{i}" }, parsed.keys.drop(1)
  end

  test "the report gives a component's nested counters a line each, and none to an empty table" do
    report = Loadout::Stats::Report.new(pid: Process.pid, parent: nil, forks: 0, setup_seconds: nil, off: {},
                                        requires: nil, baseline: {}, events: {}, bytes: 0, timings: [], root: nil,
                                        components: { load_path: { hits: 3, fallback_reasons: {} },
                                                      compile_cache: { iseq: { hits: 2, reasons: { mtime: 1 } } } })
    lines = report.lines
    assert_includes lines, format("  %-19s %s", "load_path:", "hits=3")
    assert_includes lines, format("  %-19s %s", "iseq:", "hits=2 reasons=mtime:1")
    assert_empty lines.grep(/fallback_reasons/), lines.join("\n")
  end
end

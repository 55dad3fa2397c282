# frozen_string_literal: true

require "test_helper"
require "stringio"
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
        Loadout::Stats.__time_require("inner") { false } # already loaded (a failed nested require below counts as nested time too)
        assert_raises(LoadError) { Loadout::Stats.__time_require("missing") { tick.(0.001); raise LoadError } }
        tick.(0.005)
        true
      end
    end
    times = Loadout::Stats.timings.to_h { |t, f| [f, t.round(6)] }
    assert_equal({ "inner" => 0.1, "outer" => 0.015 }, times)
    assert_equal({ calls: 4, loaded: 2, failed: 1 }, Loadout::Stats.requires)
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

  test "the boot record is plain data that round-trips through the store" do
    store = Object.new
    def store.put(key, value)
      @data = [key, value]
      nil
    end

    def store.get(key)
      @data && @data[0] == key ? @data[1] : nil
    end
    Loadout::Stats.record(store)
    snap = Loadout::Stats.last_boot(store)
    assert_equal Process.pid, snap["pid"]
    assert_equal Loadout::BACKEND.to_s, snap["backend"]
    assert_kind_of Hash, snap["components"]
    assert_equal({ "a" => [1, :b, "Object"] }, Loadout::Stats.plain({ "a" => [1, :b, Object] }))
  end

  test "a damaged boot record reads as none" do
    store = Object.new
    def store.get(_key)
      "\x04\x08garbage"
    end
    assert_nil Loadout::Stats.last_boot(store)
  end
end

# frozen_string_literal: true

require "test_helper"

class LoadPathTest < Minitest::Test
  test "bad options raise ConfigError naming the option" do
    error = assert_raises(Loadout::ConfigError) { Loadout::LoadPath.install!(trust: :maybe) }
    assert_equal "trust", error.name
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.install!(development_mode: "yes") }
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.install!(ignore_directories: "node_modules") }
    assert_raises(Loadout::ConfigError) { Loadout::LoadPath.install!(store: Object.new) }
  end

  test "install, find, events, stats and uninstall in a child" do
    with_files([["a/x.rb", "X = 1"], ["b/x.rb", "X = 2"]]) do |dir|
      result = run_ruby!(<<~RUBY)
        require "loadout"
        events = []
        Loadout.instrumentation = ->(event, path, **info) { events << [event, path, info[:reason]] }
        $LOAD_PATH.unshift(#{"#{dir}/a".dump}, #{"#{dir}/b".dump})
        Loadout::LoadPath.install!
        p Loadout::LoadPath.installed?
        p Loadout::LoadPath.find("x")
        require "x"
        begin; require "nope_nope"; rescue LoadError; end
        require "sub/../x"
        p events.reject { |e| e[0] == :rescan }
        s = Loadout::LoadPath.stats
        p s.values_at(:hits, :misses, :fallbacks)
        p s[:restore_ms].is_a?(Float)
        Loadout::LoadPath.uninstall!
        p Loadout::LoadPath.installed?, Loadout::LoadPath.stats, Loadout::LoadPath.find("x")
      RUBY
      lines = result.stdout.lines.map(&:chomp)
      assert_equal "true", lines[0]
      assert_equal "#{dir}/a/x.rb".inspect, lines[1]
      assert_equal [[:hit, "x", nil], [:miss, "nope_nope", nil], [:fallback, "sub/../x", :shape]].inspect, lines[2]
      assert_equal "[1, 1, 1]", lines[3]
      assert_equal "true", lines[4]
      assert_equal ["false", "{}", "nil"], lines[5..7]
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "stringio"
require "support/subprocess"
require "loadout/cli"
require "loadout/gc_settings"

# `loadout gc` and GCSettings: what a boot ends with becomes the RUBY_GC_* settings that start the
# next boot there. The prediction is checked against what the next boot then does: with the
# settings, the same boot runs fewer GCs than without them.
class GCSettingsTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  SETTINGS = Loadout::GCSettings

  test "the heap and malloc limits a boot ended with, rounded up; Ruby's defaults left out" do
    one_heap = { "slots" => 728_941, "malloc_limit" => 32_883_343, "oldmalloc_limit" => 16_777_216 }
    pools = { "pool0.slots" => 500_001, "pool0.slot_size" => 40, "pool1.slots" => 9_000, "pool1.slot_size" => 80,
              "pool2.slots" => 20_400, "pool2.slot_size" => 160, "malloc_limit" => 16_000_000 }
    if SETTINGS.pools?
      assert_equal [["RUBY_GC_HEAP_0_INIT_SLOTS", 501_000], ["RUBY_GC_HEAP_2_INIT_SLOTS", 21_000]],
                   SETTINGS.recommend(pools).map { |n, v, _| [n, v] }
    else
      assert_equal [["RUBY_GC_HEAP_INIT_SLOTS", 729_000], ["RUBY_GC_MALLOC_LIMIT", 32 * 1024 * 1024]],
                   SETTINGS.recommend(one_heap).map { |n, v, _| [n, v] }
    end
    assert_empty SETTINGS.recommend({ "slots" => 9_000, "malloc_limit" => 16 * 1024 * 1024 })
  end

  test "a boot records what it ended with; loadout gc turns it into settings that make the same boot run fewer GCs" do
    files = Array.new(150) { |i| ["lib/gc_file_#{i}.rb", "GC_FILE_#{i} = Array.new(400) { |j| \"v\#{j}\" * 3 }\n"] }
    with_files([["Gemfile", ""], *files]) do |app|
      boot = <<~RUBY
        require "loadout"
        Loadout.setup(cache_dir: "#{app}/tmp/cache/loadout", root: "#{app}")
        $LOAD_PATH.unshift("#{app}/lib")
        150.times { |i| require "gc_file_\#{i}" }
        keep = Array.new(200_000) { |i| "s\#{i}" }
        puts "gc=\#{::GC.count}"
      RUBY
      env = ENV.keys.grep(/\\ARUBY_GC_/).to_h { |k| [k, nil] }
      2.times { run_ruby!(boot, env: env) }
      without = run_ruby!(boot, env: env).stdout[/gc=(\d+)/, 1].to_i

      out = StringIO.new
      err = StringIO.new
      status = Loadout::CLI.new(%w[gc --env], out: out, err: err, env: { "BUNDLE_GEMFILE" => "#{app}/Gemfile" }).run
      assert_equal 0, status, err.string
      settings = out.string.lines.map { |l| l.chomp.split("=", 2) }.to_h
      slots = SETTINGS.pools? ? "RUBY_GC_HEAP_0_INIT_SLOTS" : "RUBY_GC_HEAP_INIT_SLOTS"
      assert_operator settings[slots].to_i, :>, 200_000, out.string
      settings.each_value { |v| assert_match(/\A\d+\z/, v) }

      report = StringIO.new
      Loadout::CLI.new(%w[gc], out: report, err: err, env: { "BUNDLE_GEMFILE" => "#{app}/Gemfile" }).run
      assert_includes report.string, "Dockerfile:  ENV #{settings.map { |k, v| "#{k}=#{v}" }.join(" ")}"
      assert_match(/ran \d+ GCs \(\d+ major\)/, report.string)

      with = run_ruby!(boot, env: env.merge(settings)).stdout[/gc=(\d+)/, 1].to_i
      assert_operator with, :<, without, "GCs with #{settings} (#{with}) vs without (#{without})"
    end
  end

  test "loadout gc before any boot says how to record one" do
    with_files([["Gemfile", ""]]) do |app|
      out = StringIO.new
      err = StringIO.new
      status = Loadout::CLI.new(%w[gc], out: out, err: err, env: { "BUNDLE_GEMFILE" => "#{app}/Gemfile" }).run
      assert_equal 0, status
      assert_empty out.string
      assert_includes err.string, "no boot recorded in #{app}/tmp/cache/loadout yet"
    end
  end
end

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
    one_heap = { "slots" => 728_941, "malloc_limit" => 29_883_343, "oldmalloc_limit" => 16_777_216 }
    pools = { "pool0.slots" => 500_001, "pool0.slot_size" => 40, "pool1.slots" => 9_000, "pool1.slot_size" => 80,
              "pool2.slots" => 20_400, "pool2.slot_size" => 160, "malloc_limit" => 16_000_000 }
    if SETTINGS.pools?
      assert_equal [["RUBY_GC_HEAP_0_INIT_SLOTS", 501_000], ["RUBY_GC_HEAP_2_INIT_SLOTS", 21_000]],
                   SETTINGS.recommend(pools).map { |n, v, _| [n, v] }
    else
      assert_equal [["RUBY_GC_HEAP_INIT_SLOTS", 729_000], ["RUBY_GC_MALLOC_LIMIT", 29 * 1024 * 1024]],
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

  test "a boot held at Ruby's 32 MiB malloc cap gets half as much again, as limit and cap; a fixed point" do
    mib = 1024 * 1024
    names = %w[RUBY_GC_MALLOC_LIMIT RUBY_GC_MALLOC_LIMIT_MAX]
    malloc = ->(gc) { SETTINGS.recommend(gc).to_h { |n, v, _| [n, v] }.slice(*names) }
    capped = { "RUBY_GC_MALLOC_LIMIT" => 48 * mib, "RUBY_GC_MALLOC_LIMIT_MAX" => 48 * mib }
    assert_equal capped, malloc.({ "malloc_limit" => 32 * mib })
    assert_equal capped, malloc.({ "malloc_limit" => 32_883_343 }) # 2% under it: one GC that stayed below
    # A cap set by hand is kept (its value Ruby's default or not), never lowered to the limit.
    assert_equal({ "RUBY_GC_MALLOC_LIMIT" => 32 * mib, "RUBY_GC_MALLOC_LIMIT_MAX" => 32 * mib },
                 malloc.({ "malloc_limit" => 32 * mib, "malloc_limit_max" => 32 * mib }))
    # A boot started with that advice ends there, and is told the same.
    assert_equal capped, malloc.({ "malloc_limit" => 48 * mib, "malloc_limit_max" => 48 * mib })
    assert_equal({ "RUBY_GC_MALLOC_LIMIT" => 95 * mib, "RUBY_GC_MALLOC_LIMIT_MAX" => 200 * mib },
                 malloc.({ "malloc_limit" => 95 * mib, "malloc_limit_max" => 200 * mib }))
    assert_equal({ "RUBY_GC_MALLOC_LIMIT" => 24 * mib }, malloc.({ "malloc_limit" => 23 * mib + 1 }))

    # The cap a boot ran with, read as Ruby reads it (gc.c get_envparam_size).
    assert_equal [64 * mib, 16, 15, 1024 * mib, 48 * mib, 5 * 1024],
                 ["64m", "0x10", "017", "1g", "48M ", "5k"].map { |v| SETTINGS.env_size(v) }
    assert_equal [nil, nil, nil, nil], [nil, "0", "-5", "12x"].map { |v| SETTINGS.env_size(v) }
    probe = 'require "loadout/gc_settings"; print Loadout::GCSettings.snapshot["malloc_limit_max"]'
    assert_equal "", run_ruby!(probe, env: { "RUBY_GC_MALLOC_LIMIT_MAX" => nil }).stdout
    assert_equal (48 * mib).to_s, run_ruby!(probe, env: { "RUBY_GC_MALLOC_LIMIT_MAX" => "48m" }).stdout
  end

  test "a boot started with the capped advice runs fewer GCs than one started at the cap" do
    # 400 MB malloced in 1 MB Strings, 8 kept: the limit climbs to Ruby's cap and stays there.
    script = <<~RUBY
      require "loadout/gc_settings"
      keep = []
      400.times { |i| s = "x" * 1_000_000; keep << s if (i % 50).zero? }
      print GC.count, " ", Loadout::GCSettings.snapshot["malloc_limit"]
    RUBY
    env = ENV.keys.grep(/\ARUBY_GC_/).to_h { |k| [k, nil] }
    count, limit = run_ruby!(script, env: env).stdout.split.map(&:to_i)
    advice = SETTINGS.recommend({ "malloc_limit" => limit }).to_h { |n, v, _| [n, v.to_s] }
    assert_equal %w[RUBY_GC_MALLOC_LIMIT RUBY_GC_MALLOC_LIMIT_MAX], advice.keys, "limit #{limit}"
    at_cap = run_ruby!(script, env: env.merge("RUBY_GC_MALLOC_LIMIT" => (32 << 20).to_s)).stdout.split.first.to_i
    with = run_ruby!(script, env: env.merge(advice)).stdout.split.first.to_i
    assert_operator with, :<, at_cap, "GCs with #{advice}: #{with}; starting at the cap: #{at_cap}; without: #{count}"
    assert_operator with, :<, count
  end

  test "off CRuby a boot records no GC figures (JRuby's GC.stat asks the JVM, and RUBY_GC_* are CRuby's)" do
    refute SETTINGS.applies?("jruby")
    assert_nil SETTINGS.snapshot(engine: "jruby")
    assert_kind_of Integer, SETTINGS.snapshot(engine: "ruby")["count"]
    record = Loadout::LastBoot.snapshot([], 0.01, false)
    assert_kind_of Hash, record["gc"] # (this is CRuby: the figures are there)
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

# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# Every file loadout reads or writes is bytes, whatever the app sets Encoding.default_internal /
# default_external to (Rails sets both to UTF-8 while it boots): the store opens, writes and
# reopens, the hint is written, caches hit on the next boot, nothing is printed and no temp file
# stays. Each boot is a child Ruby, compared with the same program without loadout.
class BinaryIOTest < Minitest::Test
  include Loadout::TestSupport::App

  # The app changes its encodings after loadout's setup (as Rails does), then requires more,
  # reads JSON and YAML, and exits (the store flushes, records the boot and writes the hint).
  SCRIPT = <<~'RUBY'
    ext, int, load_path = ARGV
    if ENV["WITH_LOADOUT"] == "1"
      require "loadout"
      Loadout.setup(cache_dir: File.expand_path("cache"), load_path_cache: load_path == "lp")
    end
    require "json"
    require "yaml"
    Encoding.default_external = ext
    Encoding.default_internal = int == "-" ? nil : int
    # Plain Ruby cannot require anything once default_external is ASCII-incompatible.
    if Encoding.default_external.ascii_compatible?
      require "set"
      require "ostruct"
    end
    results = [-> { JSON.load_file("data.json") }, -> { JSON.load_file("data.json", symbolize_names: true) },
               -> { YAML.load_file("data.yml") }, -> { YAML.unsafe_load_file("data.yml", symbolize_names: true) }]
    results = results.map do |call|
      value = call.call
      [:ok, Marshal.dump(value), value.to_s.encoding.name]
    rescue StandardError => e
      [:raise, e.class.name, e.message.b]
    end
    $stdout.binmode
    $stdout.write([Marshal.dump(results)].pack("m0"), "\n")
    if defined?(Loadout::CompileCache)
      stats = Loadout::CompileCache.stats.to_h do |kind, s|
        [kind, s.slice(:hits, :misses, :stale, :revalidated, :skipped)]
      end
      $stdout.write([Marshal.dump(stats)].pack("m0"), "\n")
    end
  RUBY

  FILES = [["data.json", %({"name": "h\u00e9llo w\u00f6rld", "list": [1, 2.5, null, true], "nested": {"k": "\u65e5"}})],
           ["data.yml", "name: h\u00e9llo w\u00f6rld\nlist: [1, 2.5, ~, true]\nnested:\n  k: \u65e5\u672c\n"],
           ["boot.rb", SCRIPT]].freeze

  # [external, internal, load-path index on?]. UTF-16LE: the load-path index is off, being
  # reworked elsewhere (its $LOADED_FEATURES bookkeeping is not yet ready for non-ASCII-compatible
  # encodings); everything else is on.
  COMBOS = [%w[UTF-8 UTF-8 lp], %w[ISO-8859-1 Windows-31J lp], %w[Windows-31J UTF-8 lp], %w[UTF-8 - lp],
            %w[UTF-16LE - lp]].freeze

  def boot(dir, combo, with:)
    result = spawn_ruby("boot.rb", *combo, chdir: dir, env: { "WITH_LOADOUT" => with ? "1" : "0" })
    assert result.success?, "#{combo.inspect} failed:\n#{result.stdout}\n#{result.stderr}"
    assert_empty result.stderr, "#{combo.inspect} printed to stderr"
    lines = result.stdout.lines.map { |l| Marshal.load(l.chomp.unpack1("m0")) } # rubocop:disable Security/MarshalLoad
    [lines[0], lines[1]]
  end

  # The cache dir's files; loadout's own self cache (native backend only) is left out.
  def cache_files(dir, name = "cache")
    Dir.children(File.join(dir, name)).sort.grep_v(/\Astore\.self-\h+\z/)
  end

  def assert_hint_covers_store(dir, combo)
    path = File.join(dir, "cache", "store")
    covered = Loadout::Store.open(path, readonly: true) { |s| s.instance_variable_get(:@hint_end) }
    refute_equal(-1, covered, "#{combo.inspect}: the hint file is missing or does not match the store")
    assert_equal File.size(path), covered, "#{combo.inspect}: the hint does not cover the whole store"
  end

  COMBOS.each do |combo|
    test "external #{combo[0]}, internal #{combo[1]}: plain results, no warning, no temp file, warm boot hits" do
      with_files(FILES) do |dir|
        plain, = boot(dir, combo, with: false)
        cold, = boot(dir, combo, with: true)
        assert_equal plain, cold, "cold boot differs from plain Ruby"
        assert_equal %w[store store.hint store.last-boot], cache_files(dir)
        assert_hint_covers_store(dir, combo)
        warm, stats = boot(dir, combo, with: true)
        assert_equal plain, warm, "warm boot differs from plain Ruby"
        assert_equal %w[store store.hint store.last-boot], cache_files(dir)
        assert_hint_covers_store(dir, combo)

        assert_equal 0, stats[:iseq][:misses], stats.inspect
        assert_operator stats[:iseq][:hits], :>, 0 if Encoding.find(combo[0]).ascii_compatible?
        # Served = hit, or revalidated (a file written just before its entry is confirmed by digest).
        served = ->(kind) { stats[kind][:hits] + stats[kind][:revalidated] }
        json_ok = plain.first(2).count { |status, *| status == :ok }
        if Encoding.find(combo[0]).ascii_compatible?
          assert_equal json_ok, served[:json], stats.inspect
        else
          # No path is valid in such an encoding: the values go to the library, uncounted as misses.
          assert_equal 2, stats[:json][:skipped], stats.inspect
        end
        yaml_cached = [nil, "-", "UTF-8"].include?(combo[1]) && Encoding.find(combo[0]).ascii_compatible?
        assert_equal(yaml_cached ? 2 : 0, served[:yaml], stats.inspect)
      end
    end
  end

  test "the issue's three lines: default_internal = UTF-8 after setup, then a require" do
    with_files do |dir|
      result = spawn_ruby("-e", 'require "loadout"; Loadout.setup(cache_dir: "c"); ' \
                                'Encoding.default_internal = Encoding::UTF_8; require "set"', chdir: dir)
      assert result.success?, result.stderr
      assert_empty result.stderr
      assert_equal %w[store store.hint store.last-boot], cache_files(dir, "c")
    end
  end
end

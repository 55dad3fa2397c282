# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# A value whose parts are shared (YAML anchors and aliases) must cost what it costs Psych, whose
# objects are shared too: a serializer that writes a shared part once per reference (MessagePack
# has no references), or a walk that visits it once per path, turns a 1 KB file into work that
# grows with 10^levels (issue #23, item 3: a boot that hung on every start). Measured here by what
# cannot drift: the objects a load allocates and the freeze calls it makes, against plain Ruby's.
class CompileCacheSharedValuesTest < Minitest::Test
  include Loadout::TestSupport::App

  MSGPACK = Gem::Specification.find_by_name("msgpack").full_require_paths

  # Level k is a list of ten aliases of level k-1; level 0 ten strings.
  def alias_file(levels)
    lines = ["l0: &l0 [#{(1..10).map { |i| "s#{i}" }.join(", ")}]"]
    (1..levels).each { |k| lines << "l#{k}: &l#{k} [#{Array.new(10, "*l#{k - 1}").join(", ")}]" }
    "#{lines.join("\n")}\n"
  end

  # Loads data.yml with +call+ three times (cold, then from the entry the first stored): per load,
  # the objects allocated, the freeze calls, and a description of the value's sharing.
  SCRIPT = <<~'RUBY'
    if ENV["WITH_LOADOUT"] == "1"
      require "loadout"
      Loadout.setup(cache_dir: File.expand_path("cache"), root: Dir.pwd)
    end
    require "msgpack"
    require "yaml"
    freezes = 0
    trace = TracePoint.new(:c_call) { |tp| freezes += 1 if tp.method_id == :freeze }
    path = File.expand_path("data.yml")
    call = ENV.fetch("CALL")
    runs = Array.new(Integer(ENV.fetch("RUNS"))) do
      GC.start
      before = GC.stat(:total_allocated_objects)
      freezes = 0
      trace.enable
      value = case call
              when "unsafe" then YAML.unsafe_load_file(path)
              when "aliases" then YAML.load_file(path, aliases: true)
              when "i18n" then YAML.unsafe_load_file(path, symbolize_names: true, freeze: true)
              end
      trace.disable
      allocated = GC.stat(:total_allocated_objects) - before
      top = value.keys.last
      shared = value[top].map(&:object_id).uniq.size == 1 && value[top][0].equal?(value[value.keys[-2]])
      [allocated, freezes, shared, value.keys.size, value[top].size, value.frozen?]
    end
    stats = defined?(Loadout::CompileCache) ? Loadout::CompileCache.stats[:yaml] : {}
    puts Marshal.dump([runs, stats]).unpack1("H*")
  RUBY

  def run_loads(dir, call, with:, runs: 3)
    env = { "WITH_LOADOUT" => with ? "1" : "0", "CALL" => call, "RUNS" => runs.to_s }
    result = spawn_ruby(*MSGPACK.flat_map { |p| ["-I", p] }, "load.rb", chdir: dir, env: env)
    assert result.success?,
           "#{call} (#{with ? "with" : "without"} loadout): #{result.status}\n#{result.stdout}#{result.stderr}"
    Marshal.load([result.stdout.lines.last.chomp].pack("H*")) # rubocop:disable Security/MarshalLoad
  end

  %w[unsafe aliases i18n].each do |call|
    test "#{call}: a YAML value with aliases is stored and served without being expanded" do
      with_files([["data.yml", alias_file(5)], ["load.rb", SCRIPT]]) do |dir|
        plain, = run_loads(dir, call, with: false, runs: 1)
        allocated, freezes, = plain[0]
        cold, = run_loads(dir, call, with: true)
        warm, stats = run_loads(dir, call, with: true)
        expected = plain[0].drop(2)
        (cold + warm).each_with_index do |(a, f, *shape), i|
          assert_equal expected, shape, "load #{i}: the same value, shared the same way"
          # 10^5 copies of level 0 would be 1.1 million objects and freeze calls: the bounds are
          # plain Ruby's own load plus what handling one small value costs (the pure-Ruby XXH64
          # twin allocates a few thousand), far below that.
          assert_operator a, :<, allocated + 50_000, "load #{i} allocated #{a} objects (plain Ruby: #{allocated})"
          assert_operator f, :<, freezes + 50_000, "load #{i} made #{f} freeze calls (plain Ruby: #{freezes})"
        end
        assert_equal 3, stats[:hits] + stats[:revalidated], stats.inspect
      end
    end
  end

  # The issue's file: seven levels. Plain Ruby loads it at once; each load above would be 10^7
  # copies. A child that takes over a minute of CPU time (SIGXCPU) or 2 GiB of memory fails the
  # test instead of the machine.
  LIMITS = "Process.setrlimit(:CPU, 60, 61)\nProcess.setrlimit(:AS, 2 << 30)\n"

  test "the seven-level alias file loads cold and warm, every call shape" do
    with_files([["data.yml", alias_file(7)], ["load.rb", LIMITS + SCRIPT]]) do |dir|
      %w[unsafe aliases i18n].each do |call|
        plain, = run_loads(dir, call, with: false, runs: 1)
        cold, = run_loads(dir, call, with: true, runs: 1)
        warm, stats = run_loads(dir, call, with: true, runs: 1)
        assert_equal plain[0].drop(2), cold[0].drop(2), call
        assert_equal plain[0].drop(2), warm[0].drop(2), call
        assert_equal 1, stats[:hits] + stats[:revalidated], "#{call}: #{stats.inspect}"
      end
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# JSON.load_file and load_file! under loadout behave exactly as the loaded json gem does, for
# every call shape, whatever that gem's signature: Ruby 3.1's default json (2.6, (filespec,
# opts = {})), json 2.21 ((filespec, opts = nil), warns about duplicate keys) and json 3.1
# ((filespec, **options)), the last two installed by bin/setup-deps into vendor/side-gems. Each
# program runs without loadout, then cold and warm with it, in child Rubies.
class JsonVersionsTest < Minitest::Test
  include Loadout::TestSupport::App

  SIDE_GEMS = File.expand_path("../../vendor/side-gems", __dir__)

  # [method, positional args after the path (:path stands for it), keywords]
  CALLS = [
    [[:path], {}], [[:path, { symbolize_names: true }], {}], [[:path], { symbolize_names: true }],
    [[:path, nil], {}], [[:path, {}], {}], [[:path], { freeze: true }],
    [[:path], { symbolize_names: true, freeze: true }],
    [[:path], { max_nesting: 1 }], [[:path], { bogus: 1 }], [[:path, { symbolize_names: true }], { freeze: true }],
    [[:path, "opts"], {}], [[], {}], [[:path, {}, 3], {}], [[:path], { "symbolize_names" => true }],
    [[:nan], {}], [[:nan], { allow_nan: true }], [[:dup], {}], [[:dup], { allow_duplicate_key: true }],
    [[:missing], {}]
  ].flat_map { |args, kw| [[:load_file, args, kw], [:load_file!, args, kw]] }.freeze

  SCRIPT = <<~'RUBY'
    version = ARGV[0]
    gem "json", version unless version == "default"
    if ENV["WITH_LOADOUT"] == "1"
      require "loadout"
      Loadout.setup(cache_dir: File.expand_path("cache"))
    end
    require "json"
    calls = Marshal.load(ARGV[1].unpack1("m0"))
    paths = { path: "data.json", nan: "nan.json", dup: "dup.json", missing: "missing.json" }
    deep_frozen = lambda do |v|
      next false unless v.frozen?

      v.is_a?(Hash) ? v.all? { |k, x| deep_frozen.(k) && deep_frozen.(x) } : !v.is_a?(Array) || v.all?(&deep_frozen)
    end
    results = calls.map do |method, args, kwargs|
      args = args.map { |a| paths.fetch(a, a) }
      Array.new(3) do
        value = JSON.public_send(method, *args, **kwargs)
        [:ok, Marshal.dump(value), deep_frozen.(value)]
      rescue StandardError => e
        [:raise, e.class.name, e.message]
      end
    end
    $stdout.write([Marshal.dump([JSON::VERSION, results])].pack("m0"), "\n")
    if defined?(Loadout::CompileCache)
      $stdout.write([Marshal.dump(Loadout::CompileCache.stats[:json])].pack("m0"), "\n")
    end
  RUBY

  FILES = [["data.json", %({"name": "h\u00e9llo", "list": [1, 2.5, null, true, "x"], "nested": {"k": ["\u65e5"]}})],
           ["nan.json", '{"x": NaN}'], ["dup.json", '{"a": 1, "a": 2}'], ["calls.rb", SCRIPT]].freeze

  def run_calls(dir, version, with:, ruby_opts: [])
    env = { "WITH_LOADOUT" => with ? "1" : "0" }
    # Ruby's own json unless a side gem is asked for (the newest json on GEM_PATH would win).
    env["GEM_PATH"] = "#{SIDE_GEMS}:#{Gem.default_dir}" unless version == "default"
    result = spawn_ruby(*ruby_opts, "calls.rb", version, [Marshal.dump(CALLS)].pack("m0"), chdir: dir, env: env)
    assert result.success?, "json #{version}: #{result.stdout}\n#{result.stderr}"
    # rubocop:disable Security/MarshalLoad -- our own child's output
    values, stats = result.stdout.lines.map { |l| Marshal.load(l.chomp.unpack1("m0")) }
    # rubocop:enable Security/MarshalLoad
    [values, stats, result.stderr]
  end

  def side_gem?(version)
    version == "default" || File.directory?(File.join(SIDE_GEMS, "gems", "json-#{version}"))
  end

  %w[default 2.21.2 3.1.0].each do |version|
    test "json #{version}: every call shape gives what json gives, errors included, and hits when warm" do
      assert side_gem?(version), "json #{version} is missing from #{SIDE_GEMS}: run bin/setup-deps"
      with_files(FILES) do |dir|
        plain, = run_calls(dir, version, with: false)
        cold, = run_calls(dir, version, with: true)
        warm, stats = run_calls(dir, version, with: true)
        assert_equal version, plain[0] unless version == "default"
        CALLS.each_with_index do |(method, args, kwargs), i|
          label = "json #{plain[0]} #{method}(#{args.inspect}, **#{kwargs.inspect})"
          assert_equal plain[1][i], cold[1][i], "cold: #{label}"
          assert_equal plain[1][i], warm[1][i], "warm: #{label}"
        end
        # Every call that succeeds with Symbol options is served from the cache on the warm boot.
        servable = CALLS.each_index.count do |i|
          symbol_keys = CALLS[i][2].keys.all?(Symbol) && CALLS[i][1].grep(Hash).all? { |h| h.keys.all?(Symbol) }
          plain[1][i][0][0] == :ok && symbol_keys
        end
        raising = CALLS.each_index.count { |i| plain[1][i][0][0] == :raise }
        assert_operator servable, :>=, 10
        assert_equal servable * 3, stats[:hits] + stats[:revalidated], stats.inspect
        assert_operator stats[:misses], :<=, raising * 3, stats.inspect # an error is never cached
      end
    end
  end

  test "json 2.21.2 warns about a duplicate key under -W:deprecated on every call, cached or not" do
    assert side_gem?("2.21.2"), "json 2.21.2 is missing from #{SIDE_GEMS}: run bin/setup-deps"
    with_files(FILES) do |dir|
      opts = ["-W:deprecated"]
      _, _, plain_err = run_calls(dir, "2.21.2", with: false, ruby_opts: opts)
      expected = plain_err.scan(/detected duplicate key/).size
      assert_operator expected, :>=, 3
      2.times do
        _, stats, err = run_calls(dir, "2.21.2", with: true, ruby_opts: opts)
        assert_equal expected, err.scan(/detected duplicate key/).size, err
        assert_operator stats[:reasons][:warnings], :>, 0
      end
      # Without -W:deprecated nothing is shown, so the same calls are cached.
      run_calls(dir, "2.21.2", with: true)
      _, stats, err = run_calls(dir, "2.21.2", with: true)
      assert_empty err
      assert_equal 0, stats[:reasons].fetch(:warnings, 0)
      assert_operator stats[:hits] + stats[:revalidated], :>, 0
    end
  end
end

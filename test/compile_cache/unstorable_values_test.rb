# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"
require "loadout/store"
require "loadout/compile_cache"

# A YAML/JSON value the cache cannot keep (over the store's 64 MiB value limit, or one no codec
# reproduces exactly) is remembered as such: a negative entry keyed like the value, judged like
# any entry, so the boots that follow parse the file as plain Ruby does and serialize nothing,
# until the file changes (issue #23, item 4: an 80 MB JSON file cost every warm boot 3-4x).
class CompileCacheUnstorableValuesTest < Minitest::Test
  include Loadout::TestSupport::App

  MSGPACK = Gem::Specification.find_by_name("msgpack").full_require_paths

  # Counts every serialization of the test's value (a Hash with a "marker" key) by the codecs
  # loadout may use, whoever calls them.
  SCRIPT = <<~'RUBY'
    $dumps = 0
    marked = ->(obj) { obj.is_a?(Hash) && obj.key?("marker") }
    Marshal.singleton_class.prepend(Module.new do
      define_method(:dump) { |obj, *a| $dumps += 1 if marked.(obj); super(obj, *a) }
    end)
    require "msgpack"
    MessagePack::Factory.prepend(Module.new do
      define_method(:dump) { |obj, *a, **k| $dumps += 1 if marked.(obj); super(obj, *a, **k) }
    end)
    MessagePack::Packer.prepend(Module.new { define_method(:write) { |obj| $dumps += 1 if marked.(obj); super(obj) } })
    class Thing; attr_accessor :a; end
    events = []
    if ENV["WITH_LOADOUT"] == "1"
      require "loadout"
      Loadout.instrumentation = lambda do |event, path, **info|
        events << [event, info[:reason]] if path.to_s.include?("data.")
      end
      Loadout.setup(cache_dir: File.expand_path("cache"), root: Dir.pwd)
    end
    value = if ENV["KIND"] == "json"
              require "json"
              JSON.load_file(File.expand_path("data.json"))
            else
              require "yaml"
              YAML.unsafe_load_file(File.expand_path("data.yml"))
            end
    marker = value["marker"]
    summary = marker.is_a?(Array) ? marker.map(&:bytesize) : [marker.class.name, marker.a]
    puts Marshal.dump([summary, $dumps, events]).unpack1("H*")
  RUBY

  def boot(dir, kind, with: true)
    env = { "WITH_LOADOUT" => with ? "1" : "0", "KIND" => kind }
    result = spawn_ruby(*MSGPACK.flat_map { |p| ["-I", p] }, "boot.rb", chdir: dir, env: env)
    assert result.success?, "#{result.status}\n#{result.stdout}#{result.stderr}"
    Marshal.load([result.stdout.lines.last.chomp].pack("H*")) # rubocop:disable Security/MarshalLoad
  end

  # [[flags, payload], ...] of the entries of one kind ("y", "j") in the test's store.
  def entries(dir, letter)
    Loadout::Store.open(File.join(dir, "cache/store"), readonly: true) do |store|
      store.each.select { |k, _| k.start_with?("cc/#{letter}/") }.map do |_, blob|
        entry = Loadout::CompileCache::Entry.load(blob)
        [entry.negative?, entry.negative? ? entry.payload : nil]
      end
    end
  end

  def assert_remembered(dir, kind, letter, reason, plain)
    summary, dumps, events = boot(dir, kind) # cold: tries once
    assert_equal plain, summary
    assert_operator dumps, :>=, 1, "the cold boot tries to store the value"
    2.times do
      summary, dumps, events = boot(dir, kind)
      assert_equal plain, summary
      assert_equal 0, dumps, "a warm boot serializes nothing (events: #{events.inspect})"
      assert_equal [[:skipped, reason.to_sym]], events
    end
    assert_equal [[true, reason]], entries(dir, letter), "a negative entry, with why"
  end

  test "a JSON value over the store's value limit is remembered; a changed file is tried again" do
    big = %({"marker": [#{Array.new(66) { |i| %("#{i.to_s * (1 << 20)}") }.join(", ")}]})
    with_files([["data.json", big], ["boot.rb", SCRIPT]]) do |dir|
      plain, = boot(dir, "json", with: false)
      assert_remembered(dir, "json", "j", "too_large", plain)

      File.write(File.join(dir, "data.json"), %({"marker": ["small"]}))
      summary, dumps, = boot(dir, "json")
      assert_equal [5], summary
      assert_operator dumps, :>=, 1
      assert_equal [[false, nil]], entries(dir, "j"), "the new value is stored"
      _, dumps, events = boot(dir, "json")
      assert_equal 0, dumps
      # (Revalidated when the boot that stored it ran within the racy window of the edit.)
      assert_includes [[[:hit, nil]], [[:revalidated, nil]]], events
    end
  end

  test "a YAML value no codec reproduces (an object of an unknown class) is remembered" do
    with_files([["data.yml", "marker: !ruby/object:Thing\n  a: 1\n"], ["boot.rb", SCRIPT]]) do |dir|
      plain, = boot(dir, "yaml", with: false)
      assert_equal ["Thing", 1], plain
      assert_remembered(dir, "yaml", "y", "unfaithful", plain)
    end
  end
end

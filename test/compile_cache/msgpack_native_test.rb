# frozen_string_literal: true

require "test_helper"

# Native.msgpack_load (ext/loadout/msgpack_native.c), which reads the YAML/JSON caches'
# MessagePack entries on the native backend, against the msgpack gem that wrote them: for every
# value the compile cache can store with it, the same value (Fidelity's judgement: classes,
# frozenness, encodings, bytes, order), frozen or not; and an error, never a value, for bytes the
# gem would not read back either.
class MsgpackNativeTest < Minitest::Test
  MSGPACK = Gem::Specification.find_by_name("msgpack").full_require_paths
  Serializer = Loadout::CompileCache::Serializer
  Fidelity = Loadout::CompileCache::Fidelity

  def setup
    # (The pure backend reads entries with the gem itself.)
    skip "the C extension is not built" unless Loadout::BACKEND == :native
    $LOAD_PATH.unshift(*MSGPACK)
    require "msgpack"
    @codec = Serializer.send(:msgpack) or flunk "the msgpack gem did not load"
  end

  def native(bytes, freeze) = Loadout::Native.msgpack_load(bytes, freeze)

  def assert_reads_as_gem(value)
    bytes = @codec.dump(value)
    [true, false].each do |freeze|
      gem = @codec.load(bytes, freeze: freeze)
      ours = native(bytes, freeze)
      assert Fidelity.same?(gem, ours), "#{value.inspect[0, 200]} (freeze: #{freeze}): #{ours.inspect[0, 200]}"
    end
  end

  INTEGERS = [0, 1, 127, 128, 255, 256, 65_535, 65_536, (2**32) - 1, 2**32, (2**62) - 1, 2**62, (2**63) - 1,
              (2**64) - 1, -1, -31, -32, -33, -127, -128, -129, -32_768, -32_769, -(2**31), -(2**31) - 1,
              -(2**62), -(2**62) - 1, -(2**63)].freeze
  FLOATS = [0.0, -0.0, 1.5, -2.25, 1e300, -1e-300, Float::INFINITY, -Float::INFINITY, Float::NAN,
            Float::EPSILON, 0.1].freeze

  test "scalars at every width the format has" do
    [nil, true, false, *INTEGERS, *FLOATS].each { |v| assert_reads_as_gem(v) }
  end

  test "strings: str and bin at each length boundary, multibyte UTF-8, and Symbols" do
    [0, 1, 31, 32, 255, 256, 65_535, 65_536].each do |n|
      assert_reads_as_gem("a" * n)
      assert_reads_as_gem("\xff".b * n)
    end
    assert_reads_as_gem("héllo wörld ✓ 日本語")
    assert_reads_as_gem([:sym, :"with space", :"ünï", :"#{"a" * 300}"])
  end

  test "arrays and hashes at each length boundary, nested, in order" do
    [0, 1, 15, 16, 65_535, 65_536].each do |n|
      assert_reads_as_gem(Array.new(n) { |i| i })
      assert_reads_as_gem((0...[n, 70_000].min).to_h { |i| ["k#{i}", i.even? ? "v#{i}" : [i]] })
    end
    assert_reads_as_gem({ "en" => { "greeting" => "hi", "list" => [1, 2.5, nil, true], :sym => { "x" => [] } } })
  end

  test "random trees of everything the cache stores" do
    rng = Random.new(20_261_128)
    scalar = lambda do
      case rng.rand(8)
      when 0 then nil
      when 1 then rng.rand(2).zero?
      when 2 then INTEGERS.sample(random: rng)
      when 3 then FLOATS.sample(random: rng)
      when 4 then Array.new(rng.rand(40)) { rng.rand(0x20..0x7e).chr }.join
      when 5 then "ü" * rng.rand(5)
      when 6 then :"s#{rng.rand(50)}"
      else rng.bytes(rng.rand(10))
      end
    end
    tree = lambda do |depth|
      next scalar.call if depth > 4 || rng.rand(3).zero?

      if rng.rand(2).zero?
        Array.new(rng.rand(7)) { tree.call(depth + 1) }
      else
        Array.new(rng.rand(7)) { [rng.rand(3).zero? ? scalar.call : "k#{rng.rand(100)}", tree.call(depth + 1)] }.to_h
      end
    end
    300.times { assert_reads_as_gem(tree.call(0)) }
  end

  test "float32, which other writers use, reads as the gem reads it" do
    bytes = [0xca, 1.5].pack("Cg")
    assert_equal @codec.load(bytes, freeze: true), native(bytes, true)
    assert_equal 1.5, native(bytes, false)
  end

  test "nesting: as deep as the gem reads (128 non-empty Arrays or Hashes), and no deeper" do
    deep = lambda do |n, inner| # n non-empty levels, Arrays and Hashes in turn, around +inner+
      next inner if n.zero?

      child = deep.(n - 1, inner)
      n.odd? ? [child] : { "k" => child }
    end
    [[], {}, 1].each do |inner|
      ok = @codec.dump(deep.(128, inner))
      assert Fidelity.same?(@codec.load(ok, freeze: false), native(ok, false)), inner.inspect
      too_deep = @codec.dump(deep.(129, inner))
      assert_raises(MessagePack::StackError) { @codec.load(too_deep, freeze: false) }
      assert_raises(ArgumentError) { native(too_deep, false) }
    end
  end

  test "damaged bytes (flipped, dropped, inserted) give a value or ArgumentError / EncodingError, nothing else" do
    rng = Random.new(28_112_026)
    base = @codec.dump({ "en" => { "a" => ["x" * 40, 1, 2.5, nil, true, :s], "b" => { "c" => (1..20).to_a } } })
    outcomes = Hash.new(0)
    3000.times do
      bytes = base.b
      case rng.rand(3)
      when 0 then bytes.setbyte(rng.rand(bytes.bytesize), rng.rand(256))
      when 1 then bytes.slice!(rng.rand(bytes.bytesize))
      else bytes.insert(rng.rand(bytes.bytesize), rng.rand(256).chr)
      end
      # (What the caller rescues: the entry is then corrupt and the parser runs. Anything else,
      # or a crash, fails here.)
      outcomes[begin
        native(bytes, rng.rand(2).zero?)
        :value
      rescue ArgumentError, EncodingError
        :refused
      end] += 1
    end
    assert_operator outcomes[:value], :>, 0, outcomes.inspect
    assert_operator outcomes[:refused], :>, 0, outcomes.inspect
  end

  test "bytes the gem cannot read back raise, never a value: cut short, extra, unknown types" do
    bytes = @codec.dump({ "a" => [1, "two", 3.0, :four], "b" => "x" * 300 })
    (0...bytes.bytesize).each do |n|
      assert_raises(ArgumentError, "cut at #{n}") { native(bytes.byteslice(0, n), true) }
    end
    assert_raises(ArgumentError) { native("#{bytes}\x00", true) }
    assert_raises(ArgumentError) { native("\xc1".b, true) }
    assert_raises(ArgumentError) { native([0xd4, 1, 0].pack("CcC"), true) } # extension type 1
    assert_raises(ArgumentError) { native([0xdd, 0xffffffff].pack("CN"), true) } # a length past the end
  end
end

# frozen_string_literal: true

require "test_helper"
require "loadout/store"
require "loadout/store/crc32c" # the Ruby twins, compared with the native paths on every backend
require "loadout/store/ruby_format"

class StoreCRC32CTest < Minitest::Test
  Format = Loadout::Store.const_get(:Format)

  test "CRC-32C: hardware, table and Ruby paths agree" do
    crc = Loadout::Store.const_get(:CRC32C)
    assert_equal 0xE3069283, crc.crc32c("123456789")
    assert_equal 0, crc.crc32c("")
    rng = Random.new(42)
    inputs = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096].map { |n| rng.bytes(n) }
    inputs.each do |s|
      seed = rng.rand(2**32)
      expected = crc.crc32c(s, seed)
      assert_equal crc.crc32c(s.byteslice(s.bytesize / 2..), crc.crc32c(s.byteslice(0, s.bytesize / 2), seed)), expected
      assert_equal crc.ruby_crc32c(s, seed), expected # (on JRuby, .crc32c is the JVM's)
      next unless Loadout::BACKEND == :native

      assert_equal expected, Loadout::Native.store_crc32c(s, seed)
      assert_equal expected, Loadout::Native.store_crc32c_sw(s, seed)
      next if s.empty?

      assert_equal expected, Loadout::Native.store_crc32c(s.byteslice(1..).to_s, crc.crc32c(s.byteslice(0, 1), seed))
    end
  end

  # The JVM's CRC32C (JRuby) cannot start from a seed: a seeded call feeds it these four bytes
  # first. Checked against the Ruby twin on every engine, for seeds that stress each byte.
  test "CRC-32C: the forcing bytes have the seed as their CRC, and continue from it" do
    crc = Loadout::Store.const_get(:CRC32C)
    rng = Random.new(3)
    seeds = [0, 1, 0xffffffff, 0x80000000, 0xE3069283] + Array.new(200) { rng.rand(2**32) }
    seeds.each do |seed|
      bytes = crc.forcing_bytes(seed)
      assert_equal 4, bytes.bytesize
      assert_equal seed, crc.ruby_crc32c(bytes), "seed #{seed}"
      s = rng.bytes(rng.rand(0..40))
      assert_equal crc.ruby_crc32c(s, seed), crc.ruby_crc32c(bytes + s), "seed #{seed}"
    end
  end

  test "CRC-32C: on JRuby the JVM's class computes it" do
    crc = Loadout::Store.const_get(:CRC32C)
    skip "JRuby only (#{RUBY_ENGINE} has no java.util.zip.CRC32C)" unless RUBY_ENGINE == "jruby"

    refute_nil crc::JAVA, "java.util.zip.CRC32C (Java 9+) not found"
    rng = Random.new(5)
    50.times do
      s = rng.bytes(rng.rand(0..3000))
      seed = rng.rand(2) == 0 ? 0 : rng.rand(2**32)
      assert_equal crc.ruby_crc32c(s, seed), crc.crc32c(s, seed)
    end
  end

  test "native and Ruby framing and parsing agree record by record" do
    skip "the native extension is not built here" unless Loadout::BACKEND == :native

    rng = Random.new(7)
    buf = String.new(encoding: Encoding::BINARY)
    ruby = String.new(encoding: Encoding::BINARY)
    50.times do |i|
      key = rng.bytes(rng.rand(1..40))
      value = rng.bytes(rng.rand(0..3000))
      flags = i % 3
      Loadout::Native.store_frame_into(buf, flags, key, value)
      head = [Format::MAGIC, Format::FORMAT_VERSION, flags, key.bytesize, value.bytesize].pack("a2CCVV")
      hcrc = Loadout::Store.const_get(:CRC32C).crc32c(head)
      ruby << head << [hcrc, Loadout::Store.const_get(:CRC32C).crc32c(key + value, hcrc)].pack("VV") << key << value
    end
    assert buf == ruby, "framing differs"
    damaged = buf.dup
    [100, 5000, 20_000].each { |at| damaged.setbyte(at, damaged.getbyte(at) ^ 0x21) }
    native = Loadout::Native.store_parse(damaged, 10)
    twin = Format::RubyParser.new(damaged, 10).run
    assert_equal native, twin
    assert_operator native[2], :>=, 1
  end
end

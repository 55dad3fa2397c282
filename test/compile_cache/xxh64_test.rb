# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"

class CompileCacheXXH64Test < Minitest::Test
  XXH64 = Loadout::CompileCache::XXH64
  Freshness = Loadout::CompileCache::Freshness
  PRIME32 = 2_654_435_761
  PRIME64 = 11_400_714_785_074_694_797

  # xxHash's sanity buffer: byte i is the top byte of PRIME32 * PRIME64**i (mod 2**64).
  def sanity_buffer(len)
    gen = PRIME32
    Array.new(len) do
      byte = gen >> 56
      gen = (gen * PRIME64) & 0xFFFF_FFFF_FFFF_FFFF
      byte
    end.pack("C*")
  end

  # Values from xxHash's own sanity check (xsum_sanity_check.c), covering every length branch.
  VECTORS = [
    [0, 0, 0xEF46DB3751D8E999], [0, PRIME32, 0xAC75FDA2929B17EF],
    [1, 0, 0xE934A84ADB052768], [1, PRIME32, 0x5014607643A9B4C3],
    [4, 0, 0x9136A0DCA57457EE], [14, 0, 0x8282DCC4994E35C8],
    [14, PRIME32, 0xC3BD6BF63DEB6DF0], [222, 0, 0xB641AE8CB691C174],
    [222, PRIME32, 0x20CB8AB7AE10C14A]
  ].freeze

  test "XXH64 matches the reference sanity vectors" do
    buffer = sanity_buffer(222)
    VECTORS.each do |len, seed, expected|
      assert_equal expected, XXH64.digest(buffer.byteslice(0, len), seed), "len=#{len} seed=#{seed}"
    end
  end

  test "XXH64 of short strings matches published values" do
    assert_equal 0x44BC2CF5AD770999, XXH64.digest("abc")
    assert_equal 0xFBCEA83C8A378BF1, XXH64.digest("Nobody inspects the spammish repetition")
  end

  test "the digest of a file is the digest of its bytes, at every length around the stripe size" do
    with_files do |dir|
      [0, 3, 31, 32, 33, 64, 100, 40_000].each do |len|
        bytes = Random.new(len).bytes(len)
        path = File.join(dir, "f#{len}")
        File.binwrite(path, bytes)
        assert_equal XXH64.digest(bytes), XXH64.file(path), "len=#{len}"
      end
      assert_nil XXH64.file(File.join(dir, "missing"))
    end
  end

  test "identity has size, nanosecond times, inode and device like File.stat" do
    with_files([["a.rb", "x = 1\n"]]) do |dir|
      path = File.join(dir, "a.rb")
      File.utime(Time.at(1_600_000_000, 123_456_789, :nsec), Time.at(1_600_000_000, 123_456_789, :nsec), path)
      st = File.stat(path)
      size, mtime, ctime, ino, dev = Freshness.identity(path)
      assert_equal [6, 1_600_000_000_123_456_789, st.ino, st.dev], [size, mtime, ino, dev]
      assert_equal (st.ctime.to_i * 1_000_000_000) + st.ctime.nsec, ctime
      assert_nil Freshness.identity(File.join(dir, "nope"))
    end
  end
end

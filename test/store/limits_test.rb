# frozen_string_literal: true

require "test_helper"
require "loadout/store"
require "loadout/store/crc32c" # the Ruby twins, compared with the native functions on every backend
require "loadout/store/ruby_format"

# The store's limits and its index value (record length << OFFSET_BITS | offset) are defined once
# in ext/loadout/store.h and repeated in Store::Format: these tests hold the two to each other and
# run native and twin side by side at the edges.
class StoreLimitsTest < Minitest::Test
  Format = Loadout::Store.const_get(:Format)
  Hint = Loadout::Store.const_get(:Hint)
  CRC = Loadout::Store.const_get(:CRC32C)
  HEADER_FILE = File.expand_path("../../ext/loadout/store.h", __dir__)
  NATIVE = Loadout::BACKEND == :native

  # The #defines of store.h, evaluated (C integer suffixes dropped, macros substituted).
  def self.header_defines
    defines = {}
    File.read(HEADER_FILE).scan(/^#define (LO_STORE_\w+) (.+?)(?:\s*\/\*.*)?$/) do |name, expr|
      ruby = expr.gsub(/(\d+)(?:ULL|UL|U)\b/i, '\1').gsub(/LO_STORE_\w+/) { |m| defines.fetch(m).to_s }
      next unless ruby.match?(/\A[\d\s()<>+\-*]+\z/)

      defines[name] = Integer(eval(ruby)) # rubocop:disable Security/Eval -- our own header, digits and operators only
    end
    defines
  end

  test "store.h, Store::Format and Native::STORE_LIMITS define the same limits and index value" do
    c = self.class.header_defines
    ruby = { "LO_STORE_HEADER" => Format::HEADER, "LO_STORE_VERSION" => Format::FORMAT_VERSION,
             "LO_STORE_MAX_KEY" => Format::MAX_KEY, "LO_STORE_MAX_VALUE" => Format::MAX_VALUE,
             "LO_STORE_LENGTH_BITS" => Format::LENGTH_BITS, "LO_STORE_OFFSET_BITS" => Format::OFFSET_BITS,
             "LO_STORE_MAX_LOG" => Format::MAX_LOG, "LO_STORE_OFFSET_MASK" => Format::OFFSET_MASK }
    assert_equal ruby, c.slice(*ruby.keys)
    assert_equal 64, Format::LENGTH_BITS + Format::OFFSET_BITS, "an index value is one unsigned 64-bit integer"
    assert_operator Format::MAX_RECORD, :<, 1 << Format::LENGTH_BITS, "the largest record must fit its bits"
    return unless NATIVE

    native = Loadout::Native::STORE_LIMITS
    assert_equal({ header: Format::HEADER, max_key: Format::MAX_KEY, max_value: Format::MAX_VALUE,
                   length_bits: Format::LENGTH_BITS, offset_bits: Format::OFFSET_BITS, max_log: Format::MAX_LOG,
                   version: Format::FORMAT_VERSION }, native)
  end

  # A hint file with +entries+ ([key, offset, record length]) for a log of +covered+ bytes.
  def hint_bytes(entries)
    buf = Format::HINT_MAGIC.dup
    # (the swept end, in KiB, after the count: its largest value; the five counters after it)
    buf << ["i" * 16, 1, 2, 3, 4, 5, 6, entries.size, 0xFFFF_FFFF, 7, 8, 9, 10, 11].pack(Format::HINT_FIELDS)
    entries.each { |key, off, reclen| buf << [off, reclen, key.bytesize].pack("Q<VV") << key }
    buf << [CRC.crc32c(buf)].pack("V")
  end

  def hint_readers(bytes)
    readers = { twin: Format.ruby_hint_parse(bytes) }
    return readers unless NATIVE

    readers[:native] = Loadout::Native.store_hint_parse(bytes)
    fields, table = Loadout::Native::HintTable.load(bytes)
    readers[:table] = fields && [fields, table.to_h.keys.to_h { |k| [k, table.lookup(k)] }]
    readers
  end

  test "index values at the limits: every hint reader packs the same Integer, and refuses one past them" do
    biggest = Format::MAX_RECORD
    last_off = Format::MAX_LOG - biggest
    ok = hint_bytes([["max", last_off, biggest], ["min", 0, Format::HEADER]])
    hint_readers(ok).each do |name, (fields, map)|
      assert_equal ["i" * 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xFFFF_FFFF], fields, name.to_s
      expected = { "max" => (biggest << Format::OFFSET_BITS) | last_off, "min" => Format::HEADER << Format::OFFSET_BITS }
      assert_equal expected, map, name.to_s
      assert_equal biggest, map["max"] >> Format::OFFSET_BITS
      assert_equal last_off, map["max"] & Format::OFFSET_MASK
      assert_operator map["max"], :<, 1 << 64
    end
    [["record too long", 0, biggest + 1], ["past the largest log", last_off + 1, biggest],
     ["shorter than a header", 0, Format::HEADER - 1], ["offset beyond 64 bits", 1 << 63, 100]].each do |why, off, len|
      hint_readers(hint_bytes([["k", off, len]])).each { |name, result| assert_nil result, "#{name}: #{why}" }
    end
  end

  # A header (valid header CRC) claiming +klen+/+vlen+, with no body after it.
  def bare_header(klen, vlen)
    head = [Format::MAGIC, Format::FORMAT_VERSION, Format::PUT, klen, vlen].pack("a2CCVV")
    head << [CRC.crc32c(head), 0].pack("VV")
  end

  def parsers(buf, base)
    results = { twin: Format::RubyParser.new(buf, base).run }
    results[:native] = Loadout::Native.store_parse(buf, base) if NATIVE
    results
  end

  test "record headers at the length limits: native and twin parsers agree" do
    good = Format.ruby_frame_into(+"".b, Format::PUT, "after", "value")
    # At the limits and cut short: a torn tail (nothing indexed, nothing corrupt).
    parsers(bare_header(Format::MAX_KEY, Format::MAX_VALUE), 0).each do |name, result|
      assert_equal [[], 0, 0, 0, false], result, name.to_s
    end
    # One byte past either limit: a damaged header, skipped; the record after it is found.
    [[Format::MAX_KEY + 1, 0], [3, Format::MAX_VALUE + 1]].each do |klen, vlen|
      results = parsers(bare_header(klen, vlen) + good, 0)
      results.each do |name, (entries, good_end, corrupt, _bytes, _newer)|
        assert_equal [Format::PUT, "after", 20, good.bytesize], entries, "#{name} #{klen}/#{vlen}"
        assert_equal 20 + good.bytesize, good_end
        assert_equal 1, corrupt
      end
      assert_equal 1, results.values.uniq.size, "native and twin differ: #{results.inspect}"
    end
    # A record that would end past the largest log is not indexed (a tail), however valid.
    parsers(good, Format::MAX_LOG - good.bytesize + 1).each do |name, result|
      assert_equal [[], Format::MAX_LOG - good.bytesize + 1, 0, 0, false], result, name.to_s
    end
    parsers(good, Format::MAX_LOG - good.bytesize).each do |name, (entries, *)|
      assert_equal [Format::PUT, "after", Format::MAX_LOG - good.bytesize, good.bytesize], entries, name.to_s
    end
  end

  test "framing refuses one byte past each limit, native and twin alike" do
    framers = { twin: ->(k, v) { Format.ruby_frame_into(+"".b, Format::PUT, k, v) } }
    framers[:native] = ->(k, v) { Loadout::Native.store_frame_into(+"".b, Format::PUT, k, v) } if NATIVE
    framers.each do |name, frame|
      assert_raises(ArgumentError, name.to_s) { frame.("k" * (Format::MAX_KEY + 1), "") }
      assert_raises(ArgumentError, name.to_s) { frame.("k", "v" * (Format::MAX_VALUE + 1)) }
      assert_equal Format::HEADER + Format::MAX_KEY, frame.("k" * Format::MAX_KEY, "").bytesize
    end
    return unless NATIVE # the twin's CRC runs at ~10 MB/s: the largest record is framed natively only

    rec = Loadout::Native.store_frame_into(+"".b, Format::PUT, "k" * Format::MAX_KEY, "v" * Format::MAX_VALUE)
    assert_equal Format::MAX_RECORD, rec.bytesize
    assert_equal Format::MAX_VALUE, Loadout::Native.store_verify(rec, "k" * Format::MAX_KEY).bytesize
    assert_equal [[Format::PUT, "k" * Format::MAX_KEY, 0, rec.bytesize], rec.bytesize, 0, 0, false],
                 Loadout::Native.store_parse(rec, 0)
  end

  # The case that raised RangeError from get and close: a record over 16 MiB (24 bits of length).
  test "a 16 MiB + 1 KiB value: put, get, close, reopen from the hint, get; both hint writers agree" do
    big = Random.new(3).bytes(1024) * ((16 << 10) + 1)
    with_files do |dir|
      path = File.join(dir, "store")
      (NATIVE ? [false, true] : [true]).each do |fail_safe| # (the twin's CRC is slow)
        File.delete(path) if File.exist?(path)
        Loadout::Store.open(path, fail_safe: fail_safe) do |store|
          store.put("big", big)
          store.put("small", "s")
          assert_equal big, store.get("big")
        end
        assert File.exist?("#{path}.hint"), "close wrote the hint"
        Loadout::Store.open(path, fail_safe: fail_safe) do |store|
          assert_equal big, store.get("big")
          assert_equal "s", store.get("small")
          assert_equal 0, store.stats[:corrupt_records]
        end
      end
      bytes = File.binread("#{path}.hint")
      results = hint_readers(bytes).values
      assert_equal 1, results.uniq.size, "every reader reads the hint the same way"
      map = results.first[1]
      assert_equal Format::HEADER + 3 + big.bytesize, map["big".b] >> Format::OFFSET_BITS
      next unless NATIVE

      # The twin's hint entries and the native ones, from the same map, are the same bytes.
      key_map = Loadout::Store.const_get(:KeyMap).new(map.dup)
      twin, = Hint.allocate.send(:ruby_entries, key_map)
      native, = Loadout::Native.store_hint_entries(nil, map.dup, Loadout::Store.const_get(:KeyMap)::GONE)
      assert_equal twin.b, native.b
    end
  end
end

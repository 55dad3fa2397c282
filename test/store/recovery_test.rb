# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"

# Damaged files: whatever the bytes, open never raises and nothing that was not written is served.
class StoreRecoveryTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers
  Format = Loadout::Store.const_get(:Format)

  def small_store(dir)
    path = File.join(dir, "s.store")
    final, history = write_small_store(path)
    [path, final, history, File.binread(path)]
  end

  test "truncating the file at every byte offset" do
    with_files do |dir|
      path, final, history, bytes = small_store(dir)
      records = Format.parse(bytes, 0)[0].each_slice(4).map { |_, _, off, len| off + len }
      bytes.bytesize.times do |cut|
        File.binwrite(path, bytes.byteslice(0, cut))
        store = assert_serves_only_written(path, history, readonly: true)
        # Every record that ends before the cut is still there: a torn tail loses only itself.
        whole = records.count { |e| e <= cut }
        assert_equal 0, store.stats[:corrupt_records], "a torn tail is not corruption (cut at #{cut})"
        if whole == records.size
          assert_equal final, store.each.to_h
        end
        store.close
      end
    end
  end

  test "flipping every bit of a small store" do
    with_files do |dir|
      path, final, history, bytes = small_store(dir)
      served_all = 0
      (bytes.bytesize * 8).times do |bit|
        damaged = bytes.dup
        damaged.setbyte(bit / 8, damaged.getbyte(bit / 8) ^ (1 << (bit % 8)))
        File.binwrite(path, damaged)
        store = assert_serves_only_written(path, history, readonly: true)
        served_all += 1 if store.each.to_h == final
        store.close
      end
      # Most flips hit one record's bytes: the header CRC lets the reader skip just that record.
      assert_operator served_all, :<, bytes.bytesize * 8, "some flips must cost a record"
    end
  end

  test "a flipped body loses only its own record and is counted" do
    with_files do |dir|
      path, final, _, bytes = small_store(dir)
      entries = Format.parse(bytes, 0)[0].each_slice(4).to_a
      _, key, off, len = entries.find { |_, k, _, _| k == "key-4" }
      bytes.setbyte(off + len - 1, bytes.getbyte(off + len - 1) ^ 1)
      File.binwrite(path, bytes)
      Loadout::Store.open(path) do |s|
        assert_nil s.get(key)
        assert_equal 1, s.stats[:corrupt_records]
        (final.keys - [key]).each { |k| assert_equal final[k], s.get(k), k }
      end
    end
  end

  test "a damaged header is skipped by resyncing at the next valid record" do
    with_files do |dir|
      path, final, _, bytes = small_store(dir)
      entries = Format.parse(bytes, 0)[0].each_slice(4).to_a
      _, key, off, = entries.find { |_, k, _, _| k == "key-3" }
      bytes.setbyte(off + 5, bytes.getbyte(off + 5) ^ 0x40) # key length byte
      File.binwrite(path, bytes)
      Loadout::Store.open(path) do |s|
        assert_nil s.get(key)
        assert_equal final.size - 1, s.size
        assert_equal final["key-5"], s.get("key-5")
        assert_equal 1, s.stats[:corrupt_records]
      end
    end
  end

  test "a record damaged after open is caught by the CRC check on get" do
    with_files do |dir|
      path, final, = small_store(dir)
      Loadout::Store.open(path) do |s|
        bytes = File.binread(path)
        at = bytes.index(final["key-5"])
        File.open(path, "r+b") { |f| f.pwrite("Y", at + 3) }
        assert_nil s.get("key-5")
        assert_equal 1, s.stats[:corrupt_records]
        assert_equal final["key-4"], s.get("key-4")
      end
    end
  end

  test "a torn tail is ignored by readers and cut by the next writer under the lock" do
    with_files do |dir|
      path, final, _, bytes = small_store(dir)
      torn = bytes.byteslice(0, bytes.bytesize - 7)
      File.binwrite(path, torn)
      # The torn record is the last one, the tombstone of key-2: the value before it is back.
      Loadout::Store.open(path, readonly: true) { |r| assert_equal "value-2-xxxxxx", r.get("key-2") }
      assert_equal torn.bytesize, File.size(path), "readers never truncate"
      Loadout::Store.open(path) { |w| w.put("next", "record") }
      Loadout::Store.open(path) do |s|
        assert_equal "record", s.get("next")
        assert_equal 0, s.stats[:corrupt_records], "no glued record"
        assert_equal final["key-5"], s.get("key-5")
      end
    end
  end

  test "a length field pointing past the end of the file is a torn record" do
    with_files do |dir|
      path, final, = small_store(dir)
      rec = Format.frame_into(String.new, Format::PUT, "huge", "v" * 1000)
      File.open(path, "ab") { |f| f.write(rec.byteslice(0, 100)) }
      Loadout::Store.open(path) do |s|
        assert_nil s.get("huge")
        assert_equal final.size, s.size
        assert_equal 0, s.stats[:corrupt_records]
      end
    end
  end

  test "a file from a newer format version" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      head = [Format::MAGIC, Format::FORMAT_VERSION + 1, 0, 1, 1].pack("a2CCVV")
      rec = head + [Format.crc32c(head), 0].pack("VV") + "kv"
      File.binwrite(path, rec)
      err = assert_raises(Loadout::StoreVersionError) { Loadout::Store.open(path) }
      assert_match(/newer loadout/, err.message)
      res = run_ruby!(<<~RUBY, args: [path])
        require "loadout"
        s = Loadout::Store.open(ARGV[0], fail_safe: true)
        s.put("k", "v")
        print s.writable?, " ", s.get("k").inspect
      RUBY
      assert_equal "false nil", res.stdout
      assert_equal 1, res.stderr.lines.grep(/newer loadout/).size, res.stderr
      assert_equal rec, File.binread(path), "a newer file is never written to"
    end
  end

  test "a file that is not a store is never written to" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      File.write(path, "this is somebody's notes file, not a store\n" * 3)
      original = File.binread(path)
      s = Loadout::Store.open(path)
      assert_equal 0, s.size
      refute s.writable?
      assert_raises(Loadout::StoreError) { s.put("k", "v") }
      s.close
      assert_equal original, File.binread(path)
    end
  end

  test "a record whose value contains framed records is not split" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      inner = Format.frame_into(String.new, Format::PUT, "inner", "i")
      Loadout::Store.open(path) { |s| s.put("outer", inner * 3) }
      Loadout::Store.open(path) do |s|
        assert_equal ["outer"], s.each.map { |k, _| k }
      end
    end
  end
end

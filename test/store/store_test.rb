# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"

class StoreTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers
  Format = Loadout::Store.const_get(:Format)

  def with_store(**opts)
    with_files do |dir|
      path = File.join(dir, "cache", "loadout.store")
      store = Loadout::Store.open(path, **opts)
      begin
        yield store, path
      ensure
        store.close
      end
    end
  end

  test "put, get, delete, key?, size and each round-trip binary strings" do
    with_store do |s, _|
      s.put("a", "1")
      s.put("b".b, "\xFF\x00".b)
      s.put("a", "2")
      s.delete("b")
      s.delete("never-there")
      assert_equal "2", s.get("a")
      assert_equal Encoding::BINARY, s.get("a").encoding
      assert_nil s.get("b")
      assert s.key?("a")
      refute s.key?("b")
      assert_equal 1, s.size
      assert_equal [["a", "2"]], s.each.to_a
    end
  end

  test "the parent directory is created" do
    with_store do |_, path|
      assert File.file?(path)
    end
  end

  test "a key is the same key in any encoding" do
    with_store do |s, _|
      s.put("café", "x")
      assert_equal "x", s.get("café".b)
      assert_equal ["café".b], s.each.map { |k, _| k }
    end
  end

  test "values survive reopening, with and without the hint file" do
    with_store do |s, path|
      50.times { |i| s.put("k#{i}", "v#{i}" * i) }
      s.delete("k3")
      s.close
      assert File.exist?("#{path}.hint"), "close writes a hint"
      Loadout::Store.open(path) { |r| assert_equal "v7" * 7, r.get("k7") }
      File.unlink("#{path}.hint")
      Loadout::Store.open(path) do |r|
        assert_equal 49, r.size
        assert_nil r.get("k3")
        assert_equal "v49" * 49, r.get("k49")
      end
    end
  end

  test "a hint is only trusted for the file it describes" do
    with_store do |s, path|
      s.put("old", "1")
      s.close
      hint = File.binread("#{path}.hint")
      # The same bytes under a new inode (as after a copy)...
      File.binwrite("#{path}.new", File.binread(path))
      File.rename("#{path}.new", path)
      Loadout::Store.open(path) { |r| r.put("new", "2") }
      File.binwrite("#{path}.hint", hint) # ...with a hint that covers only a prefix of it now
      Loadout::Store.open(path) do |r|
        assert_equal "1", r.get("old")
        assert_equal "2", r.get("new")
      end
    end
  end

  # A CI cache restore or a Docker layer copies the cache dir: new inodes, same bytes. The hint is
  # matched by content (covered length, CRC of the bytes that end it), so the copy opens without
  # scanning its log.
  test "a copied cache dir (new inodes) opens from its hint" do
    with_store do |s, path|
      200.times { |i| s.put("k#{i}", "v#{i}" * 20) }
      s.close
      copy = File.join(File.dirname(path), "copy")
      Dir.mkdir(copy, 0o700)
      [path, "#{path}.hint"].each { |f| File.binwrite(File.join(copy, File.basename(f)), File.binread(f)) }
      File.chmod(0o600, *Dir[File.join(copy, "*")])
      copied = File.join(copy, File.basename(path))
      Loadout::Store.open(copied) do |r|
        assert_equal File.size(copied), r.instance_variable_get(:@hint_end), "the hint covered the whole log"
        assert_equal "v7" * 20, r.get("k7")
        assert_equal 200, r.size
      end
    end
  end

  test "claim decides with another writer's latest value in view, and writes at once" do
    with_store(defer_writes: true) do |s, path|
      other = Loadout::Store.open(path, defer_writes: true)
      begin
        assert other.claim("k") { |current| current.nil? ? "first" : nil }
        seen = nil
        refute s.claim("k") { |current| (seen = current) && nil }, "nothing written when the block says nil"
        assert_equal "first", seen, "the other handle's write was caught up under the lock"
        assert s.claim("k") { |current| "#{current}+second" }
        assert_equal "first+second", other.get("k").then { other.claim("x") { nil }; other.get("k") }
      ensure
        other.close
      end
    end
  end

  test "a damaged hint is ignored and rebuilt from the log" do
    with_store do |s, path|
      20.times { |i| s.put("k#{i}", "v#{i}") }
      s.close
      hint = File.binread("#{path}.hint").b
      hint.setbyte(100, hint.getbyte(100) ^ 0x10)
      File.binwrite("#{path}.hint", hint)
      Loadout::Store.open(path) do |r|
        assert_equal 20, r.size
        assert_equal "v19", r.get("k19")
        r.put("k20", "v20")
      end
      refute_equal hint, File.binread("#{path}.hint"), "the hint was rewritten"
    end
  end

  test "records appended after the hint was written are found by a tail scan" do
    with_store do |s, path|
      s.put("a", "1")
      s.close
      other = Loadout::Store.open(path)
      other.put("b", "2") # closed without writing a hint: simulate with exit! semantics
      other.instance_variable_set(:@hint_end, other.instance_variable_get(:@end))
      other.close
      Loadout::Store.open(path) { |r| assert_equal "2", r.get("b") }
    end
  end

  test "changes on top of a hint-loaded map: overwrite, delete, add, each, size, stats" do
    with_store do |s, path|
      10.times { |i| s.put("k#{i}", "v#{i}") }
      s.close
      Loadout::Store.open(path) do |r|
        live = r.stats[:live_bytes]
        r.put("k1", "changed")
        r.delete("k2")
        r.delete("k2")
        r.put("new", "n")
        assert_equal 10, r.size
        assert_nil r.get("k2")
        refute r.key?("k2")
        assert_equal "changed", r.get("k1")
        assert_equal "v9", r.get("k9")
        expected = (0..9).map { |i| ["k#{i}", "v#{i}"] }.to_h.merge("k1" => "changed", "new" => "n")
        expected.delete("k2")
        assert_equal expected, r.each.to_h
        assert_equal live - 24 + 29 - 24 + 24, r.stats[:live_bytes]
        assert_equal 10, r.stats[:live_records]
      end
      Loadout::Store.open(path) do |r|
        assert_equal 10, r.size
        assert_equal "changed", r.get("k1")
        assert_nil r.get("k2")
        assert r.compact
        assert_equal 10, r.size
        assert_equal "n", r.get("new")
      end
    end
  end

  test "a hint rewritten from a hint-loaded map plus changes lists exactly the live keys" do
    with_store do |s, path|
      300.times { |i| s.put("k#{i}", "v#{i}") }
      s.close
      expected = nil
      Loadout::Store.open(path) do |r|
        r.put("k1", "changed")
        r.delete("k2")
        r.put("new", "n")
        r.put("gone-again", "x")
        r.delete("gone-again")
        map = r.instance_variable_get(:@map)
        refute_nil map.layers[0], "still answering from the hint table, not a full map"
        hint = r.instance_variable_get(:@hint)
        native = hint.send(:native_entries, map)
        ruby = hint.send(:ruby_entries, map)
        parse = lambda do |(entries, count)|
          list = []
          at = 0
          while at < entries.bytesize
            off, len, klen = entries.unpack("Q<VV", offset: at)
            list << [entries.byteslice(at + 16, klen), (len << Format::OFFSET_BITS) | off]
            at += 16 + klen
          end
          assert_equal count, list.size
          list.to_h
        end
        expected = parse.(ruby)
        assert_equal 300, expected.size
        assert_equal expected, parse.(native) if native
        refute expected.key?("k2")
        refute expected.key?("gone-again")
      end
      Loadout::Store.open(path) do |r|
        assert_equal expected.keys.sort, r.each.to_h.keys.sort
        assert_equal "changed", r.get("k1")
        assert_equal "n", r.get("new")
        assert_nil r.get("k2")
      end
    end
  end

  test "flipping any bit of the hint never serves a wrong value" do
    with_store do |s, path|
      5.times { |i| s.put("k#{i}", "value #{i}") }
      s.close
      hint = File.binread("#{path}.hint")
      (hint.bytesize * 8).times do |bit|
        damaged = hint.dup
        damaged.setbyte(bit / 8, damaged.getbyte(bit / 8) ^ (1 << (bit % 8)))
        File.binwrite("#{path}.hint", damaged)
        Loadout::Store.open(path, readonly: true) do |r|
          5.times { |i| assert_equal "value #{i}", r.get("k#{i}"), "bit #{bit}" }
          assert_equal 5, r.size
        end
      end
    end
  end

  test "stats count live, garbage and file bytes" do
    with_store do |s, path|
      s.put("a", "1" * 100)
      s.put("a", "2" * 100)
      s.put("b", "3")
      s.delete("b")
      st = s.stats
      assert_equal 1, st[:live_records]
      assert_equal 20 + 1 + 100, st[:live_bytes]
      assert_equal 3, st[:garbage_records]
      assert_equal File.size(path), st[:file_size]
      assert_equal 0, st[:corrupt_records]
      assert st[:writable]
    end
  end

  test "compact keeps live records, drops garbage and shrinks the file" do
    with_store do |s, path|
      100.times { |i| s.put("k#{i % 10}", "v#{i}" * 50) }
      before = File.size(path)
      ino = File.stat(path).ino
      assert s.compact
      assert_operator File.size(path), :<, before / 5
      refute_equal ino, File.stat(path).ino
      assert_equal 0, s.stats[:garbage_bytes]
      10.times { |i| assert_equal "v#{90 + i}" * 50, s.get("k#{i}") }
      s.put("after", "compaction")
      s.close
      Loadout::Store.open(path) do |r|
        assert_equal 11, r.size
        assert_equal "compaction", r.get("after")
        assert_equal "v95" * 50, r.get("k5")
      end
    end
  end

  test "garbage above half the file and 1 MB compacts automatically" do
    with_store do |s, path|
      big = "x" * 100_000
      30.times { |i| s.put("same", big + i.to_s) }
      assert_operator File.size(path), :<, 1_500_000, "auto-compaction kept the file small"
      assert_equal big + "29", s.get("same")
    end
  end

  test "another process's compaction is noticed before the next append" do
    with_store do |s, path|
      10.times { |i| s.put("k#{i}", "old" * 100) }
      status = in_child do
        Loadout::Store.open(path) do |o|
          10.times { |i| o.put("k#{i}", "new#{i}") }
          o.compact
        end
      end
      assert status.success?
      assert_equal "old" * 100, s.get("k1"), "a reader keeps serving its snapshot"
      s.put("mine", "after")
      s.close
      Loadout::Store.open(path) do |r|
        assert_equal "after", r.get("mine")
        assert_equal "new3", r.get("k3")
        assert_equal 11, r.size
      end
    end
  end

  test "defer_writes queues until flush and get sees the queue" do
    with_store(defer_writes: true) do |s, path|
      size = File.size?(path).to_i
      100.times { |i| s.put("k#{i}", "v#{i}") }
      s.delete("k5")
      assert_equal "v7", s.get("k7")
      assert_nil s.get("k5")
      assert_equal 99, s.size
      assert_equal size, File.size?(path).to_i, "nothing written before flush"
      s.flush
      assert_operator File.size(path), :>, size
      assert_equal 0, s.stats[:pending_writes]
      Loadout::Store.open(path) { |r| assert_equal "v99", r.get("k99") }
    end
  end

  test "defer_writes flushes with one write(2) at process exit, not in a forked child" do
    skip "no fork on #{RUBY_ENGINE}" unless Process.respond_to?(:fork)
    with_files do |dir|
      path = File.join(dir, "s.store")
      script = <<~RUBY
        require "loadout"
        s = Loadout::Store.open(ARGV[0], defer_writes: true)
        500.times { |i| s.put("k\#{i}", "v\#{i}") }
        pid = fork { s.get("k1"); exit 0 }   # the child exits normally and must not write
        Process.wait(pid)
        File.write(ARGV[0] + ".after_child", File.size?(ARGV[0]).to_i.to_s)
      RUBY
      res = run_ruby!(script, args: [path])
      assert_equal "0", File.read("#{path}.after_child"), res.stderr
      Loadout::Store.open(path) do |r|
        assert_equal 500, r.size
        assert_equal "v499", r.get("k499")
      end
      if system("strace -V >/dev/null 2>&1")
        Dir.mktmpdir do |d2|
          p2 = File.join(d2, "s.store")
          _, out, = Open3.capture3("strace", "-f", "-qq", "-e", "trace=write", "-P", p2, RbConfig.ruby, "-I",
                                   Loadout::TestSupport::Subprocess::LIB, "-e",
                                   'require "loadout"; s = Loadout::Store.open(ARGV[0], defer_writes: true); ' \
                                   '1000.times { |i| s.put("k#{i}", "v" * 50) }', p2)
          assert_equal 1, out.scan(/write\(/).size, "one write(2) for 1000 deferred puts:\n#{out}"
        end
      end
    end
  end

  test "a forked child that flushes writes its own queue, never its parent's" do
    with_store(defer_writes: true) do |s, path|
      s.put("parent", "queued")
      status = in_child do
        s.put("child", "1")
        s.flush
      end
      assert status.success?
      Loadout::Store.open(path, readonly: true) do |r|
        assert_equal "1", r.get("child")
        assert_nil r.get("parent"), "the child wrote its parent's queue"
      end
      s.flush
      Loadout::Store.open(path, readonly: true) { |r| assert_equal "queued", r.get("parent") }
    end
  end

  test "a forked child gets its own lock (flock is per open file description)" do
    skip "no fork on #{RUBY_ENGINE}" unless Process.respond_to?(:fork) # (before the threads: no noise)
    with_store do |s, path|
      s.put("parent", "1")
      statuses = Array.new(2) do |n|
        Thread.new { in_child { 200.times { |i| s.put("c#{n}-#{i}", "x") } } }
      end.map(&:value)
      assert statuses.all?(&:success?)
      s.close
      Loadout::Store.open(path) { |r| assert_equal 401, r.size }
    end
  end

  test "readonly stores read and refuse writes" do
    with_store do |s, path|
      s.put("a", "1")
      s.close
      r = Loadout::Store.open(path, readonly: true)
      assert_equal "1", r.get("a")
      refute r.writable?
      assert_raises(Loadout::StoreError) { r.put("b", "2") }
      r.close
      quiet = Loadout::Store.open(path, readonly: true, fail_safe: true)
      quiet.put("b", "2")
      assert_nil quiet.get("b")
      quiet.close
      missing = Loadout::Store.open(File.join(File.dirname(path), "none"), readonly: true)
      assert_equal 0, missing.size
      refute File.exist?(File.join(File.dirname(path), "none"))
    end
  end

  test "bad options raise ConfigError naming the option" do
    with_files do |dir|
      err = assert_raises(Loadout::ConfigError) { Loadout::Store.open(File.join(dir, "s"), readonly: "yes") }
      assert_match(/readonly/, err.message)
      # A key or value of another class is a TypeError, as Journal#append's payload is.
      err = assert_raises(TypeError) { Loadout::Store.open(File.join(dir, "s")) { |s| s.put(:sym, "v") } }
      assert_equal "keys and values must be Strings, got Symbol", err.message
      assert_raises(TypeError) { Loadout::Store.open(File.join(dir, "s")) { |s| s.get(1) } }
    end
  end

  test "a closed store refuses writes" do
    with_store do |s, _|
      s.close
      assert_raises(Loadout::StoreError) { s.put("a", "1") }
      s.close
    end
  end
end

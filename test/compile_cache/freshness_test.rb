# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "open3"
require "rbconfig"
require "loadout/compile_cache"
require "support/compile_cache_store"

# Freshness.judge is the compile cache's one freshness rule: every handler, `loadout check` and
# the self cache ask it. Its native version (Native.cc_judge) and its Ruby twin must agree on
# every entry, intact or damaged, for every state of the file on disk.
class CompileCacheFreshnessTest < Minitest::Test
  CC = Loadout::CompileCache
  Entry = CC::Entry
  Freshness = CC::Freshness
  SOURCE = "A = 1\n"
  KEY = "cc/i/v/~/a.rb"

  # An entry for dir/a.rb compiled from its current bytes and verified well after its ctime, as
  # a boot outside the racy window records it.
  def with_entry(flags: Entry::RAW, digest: nil)
    Dir.mktmpdir("loadout-fresh") do |dir|
      path = File.join(dir, "a.rb")
      File.write(path, SOURCE)
      past = Time.now - 60
      File.utime(past, past, path)
      id = CC::Digest.identity(path)
      digest ||= CC::Digest.file(path)
      blob = Entry.dump(flags, id, id[2] + 10_000_000_000, digest, "payload bytes " * 20,
                        path: path, realpath: File.realpath(path)).freeze
      yield path, blob, dir
    end
  end

  # The file touched (same bytes, new mtime and ctime, as after a git checkout), and the stat
  # record a revalidation would have appended for it, verified 10 s after the new ctime.
  def touch(path, digest: CC::Digest.file(path))
    later = Time.now - 30
    File.utime(later, later, path)
    id = CC::Digest.identity(path)
    [id, Entry.dump_stat(id, id[2] + 10_000_000_000, digest).freeze]
  end

  # Both implementations on the same arguments: [native, twin] (twin twice without the native
  # backend). +record+: what the lookup returns (it is called at most once per judgement).
  def both(blob, path, racy: 0, verbose: false, revalidate: true, record: nil, lookup: true)
    calls = []
    make = -> { lookup ? ->(key) { calls << key && record } : nil }
    native = Freshness.instance_variable_get(:@native)
    Freshness.instance_variable_set(:@native, nil)
    twin = Freshness.judge(blob, path, racy, verbose, revalidate, make.call, KEY)
    Freshness.instance_variable_set(:@native, native)
    native_result = native ? Freshness.judge(blob, path, racy, verbose, revalidate, make.call, KEY) : twin
    assert_operator calls.size, :<=, 2, "the lookup is called at most once per judgement"
    [native_result, twin]
  end

  # The twin's answer, after checking the native one equals it (a record differs only in its
  # verification time, which is left out).
  def judged(blob, path, **kw)
    native, twin = both(blob, path, **kw)
    assert_equal comparable(twin), comparable(native), "native and Ruby twin disagree"
    twin
  end

  def comparable(result)
    return result unless result.is_a?(Array) && result[2]

    record = result[2]
    [result[0], result[1], record.byteslice(0, 32) + record.byteslice(40, 24), result[3]]
  end

  test "fresh by its own stat at this path: the payload alone; the lookup is not called" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      calls = 0
      lookup = ->(_) { (calls += 1) && nil }
      assert_equal payload, Freshness.judge(blob, path, 0, false, true, lookup, KEY)
      assert_equal payload, judged(blob, path)
      assert_equal payload, judged(blob, path, racy: 2_000_000_000)
      assert_equal 0, calls
    end
  end

  test "an unfrozen entry becomes its payload in place; a frozen one gives a slice; other answers touch neither" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      native = Freshness.instance_variable_get(:@native)
      [nil, native].uniq.each do |backend|
        Freshness.instance_variable_set(:@native, backend)
        own = blob.dup
        assert_same own, Freshness.judge(own, path, 0, false, true, nil, KEY), "backend #{backend ? :native : :ruby}"
        assert_equal payload, own
        sliced = Freshness.judge(blob, path, 0, false, true, nil, KEY)
        assert_equal payload, sliced
        refute_same blob, sliced
        other = blob.dup
        assert_kind_of Array, Freshness.judge(other, "#{path}x", 0, false, true, nil, KEY)
        assert_equal blob, other
      ensure
        Freshness.instance_variable_set(:@native, native)
      end
    end
  end

  # The warm-boot hit: the store's String becomes the payload, no other object and no copy
  # (a frozen copy per hit once cost 8,000 objects and a 77 MB memcpy on a 6,000-file boot).
  test "native: a fresh answer allocates nothing, by its stat or by its stat record" do
    native = Freshness.instance_variable_get(:@native)
    skip "native backend only (the twin allocates an Entry by design)" unless native
    with_entry do |path, blob|
      allocated = lambda do |lookup|
        own = String.new(capacity: blob.bytesize) << blob # bytes of its own, as a store read gives
        before = GC.stat(:total_allocated_objects)
        result = Freshness.judge(own, path, 0, false, true, lookup, KEY)
        [GC.stat(:total_allocated_objects) - before, result.equal?(own)]
      end
      allocated.call(nil)
      assert_equal [0, true], allocated.call(nil), "fresh by stat"
      _, record = touch(path)
      lookup = ->(_) { record }
      allocated.call(lookup)
      assert_equal [0, true], allocated.call(lookup), "fresh by the stat record"
    end
  end

  test "a trusted file (racy -1) is fresh without a stat: even once it is gone" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      File.delete(path)
      assert_equal payload, judged(blob, path, racy: -1)
      assert_equal [:missing, nil, nil, false], judged(blob, path)
    end
  end

  test "compiled at another path: fresh, moved (the caller relocates)" do
    with_entry do |path, blob|
      other = File.join(File.dirname(path), "b.rb")
      File.symlink(path, other) # the very file the entry's stat describes, under another name
      assert_equal [:fresh, Entry.load(blob).payload, nil, true], judged(blob, other)
    end
  end

  test "a stat record for the entry's source digest vouches for a touched file" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      id, record = touch(path)
      assert_equal payload, judged(blob, path, record: record)
      assert_equal payload, judged(blob, path, record: record, racy: 2_000_000_000)
      # Refused records: the file is revalidated by its bytes instead.
      refused = {
        racy: [record, 20_000_000_000],
        other_source: [touch(path, digest: 42)[1], 0],
        other_inode: [Entry.dump_stat([id[0], id[1], id[2], id[3] + 1, id[4]], id[2] + 10_000_000_000,
                                      CC::Digest.file(path)), 0],
        short: [record.byteslice(0, 63), 0],
        not_a_string: [42, 0]
      }
      refused.each do |why, (bad, racy)|
        verdict, served, new_record, moved = judged(blob, path, record: bad, racy: racy)
        assert_equal [:revalidated, payload, false], [verdict, served, moved], why.to_s
        refute_nil Entry.load_stat(new_record), why.to_s
      end
      assert_equal [:stale, nil, nil, false], judged(blob, path, record: refused[:other_source][0], revalidate: false)
    end
  end

  test "same bytes, moved metadata: revalidated, with the stat record the next judgement accepts" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      touch(path)
      before = Freshness.now_ns
      native, twin = both(blob, path)
      after = Freshness.now_ns
      assert_equal comparable(twin), comparable(native)
      id = CC::Digest.identity(path)
      [native, twin].each do |verdict, served, record, moved|
        assert_equal [:revalidated, payload, false], [verdict, served, moved]
        assert_equal Encoding::BINARY, record.encoding
        stat = Entry.load_stat(record)
        assert_equal id + [CC::Digest.file(path)], [stat.size, stat.mtime, stat.ctime, stat.ino, stat.dev, stat.digest]
        assert_operator stat.verified, :>=, before
        assert_operator stat.verified, :<=, after
        assert_equal payload, judged(blob, path, record: record.freeze)
      end
    end
  end

  test "a new inode with the same bytes (a fresh clone) is revalidated and moved" do
    with_entry do |path, blob|
      copy = "#{path}.new"
      File.write(copy, SOURCE)
      File.rename(copy, path)
      verdict, _, record, moved = judged(blob, path)
      assert_equal [:revalidated, true], [verdict, moved]
      assert_equal File.stat(path).ino, Entry.load_stat(record).ino
    end
  end

  test "other bytes are stale (same size: by digest; another size: without reading); gone is missing" do
    with_entry do |path, blob|
      File.write(path, SOURCE.sub("1", "2"))
      assert_equal [:stale, nil, nil, false], judged(blob, path)
      File.write(path, "A = 10\n")
      assert_equal [:stale, nil, nil, false], judged(blob, path)
      File.delete(path)
      assert_equal [:missing, nil, nil, false], judged(blob, path)
    end
    with_entry(digest: 42) do |path, blob| # compiled from other bytes
      touch(path)
      assert_equal [:stale, nil, nil, false], judged(blob, path)
    end
  end

  test "within the racy window of its ctime, an entry is not trusted by its stat alone" do
    with_entry do |path, blob|
      verdict, = judged(blob, path, racy: 20_000_000_000)
      assert_equal :revalidated, verdict
      assert_equal [:stale, nil, nil, false], judged(blob, path, racy: 20_000_000_000, revalidate: false)
    end
  end

  test "negative entries say so with their reason; -w-flagged ones only under -w" do
    with_entry(flags: Entry::NEGATIVE) do |path, blob|
      assert_equal [:negative, "payload bytes " * 20, nil, false], judged(blob, path)
      touch(path)
      verdict, reason, record, = judged(blob, path)
      assert_equal [:negative, "payload bytes " * 20], [verdict, reason]
      refute_nil record, "the revalidation's record is still worth appending"
    end
    with_entry(flags: Entry::VERBOSE_WARNINGS) do |path, blob|
      assert_kind_of String, judged(blob, path)
      assert_equal :warns, judged(blob, path, verbose: true)[0]
    end
  end

  test "a path with a NUL byte or a non-Integer racy_ns is not judged" do
    with_entry do |path, blob|
      assert_nil Freshness.judge(blob, "#{path}\0", 0, false, true, nil, KEY)
      assert_nil Freshness.judge(blob, path, nil, false, true, nil, KEY)
    end
  end

  test "every single damaged byte of the entry is refused or still yields the intact payload, identically" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      blob.bytesize.times do |i|
        bad = blob.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        result = judged(bad.freeze, path)
        served = result.is_a?(String) ? result : result[1]
        # Only bytes no check reads (padding, the verified time, the source digest while the
        # stat vouches, the realpath) may change and still serve, and then only the payload.
        assert_equal payload, served, "byte #{i}" if served && !(result.is_a?(Array) && result[0] == :negative)
      end
      assert_equal :corrupt, judged(blob.byteslice(0, blob.bytesize - 1).freeze, path)[0]
    end
  end

  test "every single damaged byte of a stat record is refused or still vouches, identically" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      _, record = touch(path)
      record.bytesize.times do |i|
        bad = record.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        result = judged(blob, path, record: bad.freeze)
        # Fresh by the record (the payload alone), or refused and revalidated by the bytes.
        served = result.is_a?(String) ? result : result[1]
        assert_equal :revalidated, result[0], "byte #{i}" unless result.is_a?(String)
        assert_equal payload, served, "byte #{i}"
      end
    end
  end

  test "serve appends a revalidation's record to the store, unless read-only" do
    with_entry do |path, blob|
      touch(path)
      [false, true].each do |readonly|
        store = Loadout::TestSupport::CompileCacheStore.open(nil)
        # racy 0: the record is verified just now, right after the touch moved the ctime
        ctx = CC::Context.new(store, readonly, nil, CC::Key.new([]), 0, nil, :capture)
        verdict, = Freshness.serve(ctx, blob, path, KEY, false)
        assert_equal :revalidated, verdict
        assert_equal(readonly ? 0 : 1, store.puts)
        next if readonly

        # The next judgement: fresh by that record, so the payload alone.
        assert_equal Entry.load(blob).payload, Freshness.serve(ctx, blob, path, KEY, false)
      end
    end
  end

  test "one judgement stats the file once, whatever it has to look at" do
    skip "native backend only" unless Freshness.instance_variable_get(:@native)
    strace = ENV.fetch("PATH", "").split(":").map { |d| "#{d}/strace" }.find { |f| File.executable?(f) }
    skip "strace is not installed" unless strace
    with_entry do |path, blob|
      _, record = touch(path)
      dir = File.dirname(path)
      File.binwrite(File.join(dir, "blob"), blob)
      File.binwrite(File.join(dir, "record"), record)
      script = <<~RUBY
        require "loadout/compile_cache"
        f = Loadout::CompileCache::Freshness
        blob = File.binread(#{File.join(dir, "blob").dump}).freeze
        record = File.binread(#{File.join(dir, "record").dump}).freeze
        by_record = f.judge(blob, #{path.dump}, 0, false, true, ->(_) { record }, "k")
        revalidated = f.judge(blob, #{path.dump}, 0, false, true, ->(_) { nil }, "k")
        print [by_record.class, revalidated[0]].inspect
      RUBY
      log = File.join(dir, "strace.log")
      out, status = Open3.capture2e(strace, "-f", "-qq", "-e", "trace=stat,newfstatat,statx", "-o", log,
                                    RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", script)
      skip "strace cannot trace here (ptrace not permitted)" unless File.exist?(log)
      assert status.success?, out
      assert_equal "[String, :revalidated]", out
      assert_equal 2, File.readlines(log).count { |l| l.include?("\"#{path}\"") }, File.read(log)
    end
  end
end

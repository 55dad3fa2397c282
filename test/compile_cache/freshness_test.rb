# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "open3"
require "rbconfig"
require "loadout/compile_cache"
require "support/compile_cache_store"

# Freshness.judge is the compile cache's one freshness rule: every handler (through
# Entries#judge), `loadout check` and the self cache ask it. Its native version
# (Native.cc_judge) and its Ruby twin must agree on every entry, intact or damaged, for every
# state of the file on disk, in the verdict and in what they do to the entry and record Strings.
class CompileCacheFreshnessTest < Minitest::Test
  CC = Loadout::CompileCache
  Entry = CC::Entry
  Freshness = CC::Freshness
  SOURCE = "A = 1\n"
  PAYLOAD = "payload bytes " * 20
  KEY = "cc/i/v/~/a.rb"

  # What one judgement answered: the verdict's name, MOVED, the entry and record Strings as the
  # judge left them, and the verdict itself.
  Judged = Struct.new(:verdict, :moved, :blob, :record, :code)

  # An entry for dir/a.rb compiled from its current bytes and verified well after its ctime, as
  # a boot outside the racy window records it.
  def with_entry(flags: Entry::RAW, digest: nil)
    Dir.mktmpdir("loadout-fresh") do |dir|
      path = File.join(dir, "a.rb")
      File.write(path, SOURCE)
      past = Time.now - 60
      File.utime(past, past, path)
      id = Freshness.identity(path)
      digest ||= CC::XXH64.file(path)
      verified = id[2] + 10_000_000_000
      blob = Entry.dump(flags, id, verified, digest, PAYLOAD, path: path, realpath: File.realpath(path)).freeze
      yield path, blob, dir
    end
  end

  # The file touched (same bytes, new mtime and ctime, as after a git checkout), and the stat
  # record a revalidation would have appended for it, verified 10 s after the new ctime.
  def touch(path, digest: CC::XXH64.file(path))
    later = Time.now - 30
    File.utime(later, later, path)
    id = Freshness.identity(path)
    [id, Entry.dump_stat(id, id[2] + 10_000_000_000, digest).freeze]
  end

  def with_backend(native)
    saved = Freshness.instance_variable_get(:@native)
    Freshness.instance_variable_set(:@native, native)
    yield
  ensure
    Freshness.instance_variable_set(:@native, saved)
  end

  # One backend's judgement on copies of +blob+ and +record+ (nil: not looked up).
  def judge_with(native, blob, path, racy, verbose, revalidate, record)
    own = blob.dup
    rec = record&.dup
    verdict = with_backend(native) { Freshness.judge(own, path, racy, verbose, revalidate, rec) }
    return nil if verdict.nil?

    Judged.new(Freshness.verdict_name(verdict), (verdict & Freshness::MOVED) != 0, own, rec, verdict)
  end

  # The twin's judgement, after checking the native one equals it (a new record differs only in
  # its verification time, which is left out).
  def judged(blob, path, racy: 0, verbose: false, revalidate: true, record: nil)
    twin = judge_with(nil, blob, path, racy, verbose, revalidate, record)
    native = twin
    native = judge_with(Loadout::Native, blob, path, racy, verbose, revalidate, record) if Loadout::BACKEND == :native
    assert_equal [comparable(twin)], [comparable(native)], "native and Ruby twin disagree"
    twin
  end

  def comparable(judged)
    return judged unless judged&.record && judged.record.bytesize == 64

    judged.to_a[0, 3] + [judged.record.byteslice(0, 32) + judged.record.byteslice(40, 24), judged.code]
  end

  test "fresh by its own stat at this path: the entry becomes its payload, and no record is wanted" do
    with_entry do |path, blob|
      [0, 2_000_000_000].each do |racy|
        result = judged(blob, path, racy: racy)
        assert_equal [:fresh, false, PAYLOAD, nil], result.to_a[0, 4]
      end
    end
  end

  test "the entry is cut to its payload in place; answers without a payload leave it whole; frozen is refused" do
    with_entry do |path, blob|
      [nil, Loadout::BACKEND == :native ? Loadout::Native : nil].uniq.each do |backend|
        with_backend(backend) do
          own = String.new(blob)
          assert_equal Freshness::FRESH, Freshness.judge(own, path, 0, false, true, nil), "backend #{backend.inspect}"
          assert_equal PAYLOAD, own
          other = String.new(blob)
          assert_equal Freshness::MISSING, Freshness.judge(other, "#{path}x", 0, false, true, nil)
          assert_equal blob, other
          assert_nil Freshness.judge(blob, path, 0, false, true, nil), "a frozen entry cannot be cut"
        end
      end
    end
  end

  # The warm-boot hit: the store's String becomes the payload, no other object and no copy
  # (a frozen copy per hit once cost 8,000 objects and a 77 MB memcpy on a 6,000-file boot).
  test "native: a fresh answer allocates nothing, by its stat or by its stat record" do
    skip "native backend only (the twin allocates an Entry by design)" unless Loadout::BACKEND == :native
    with_entry do |path, blob|
      allocated = lambda do |record|
        own = String.new(capacity: blob.bytesize) << blob # bytes of its own, as a store read gives
        before = GC.stat(:total_allocated_objects)
        verdict = Freshness.judge(own, path, 0, false, true, record)
        [GC.stat(:total_allocated_objects) - before, verdict, own == PAYLOAD]
      end
      allocated.call(nil)
      assert_equal [0, Freshness::FRESH, true], allocated.call(nil), "fresh by stat"
      _, record = touch(path)
      allocated.call(record)
      assert_equal [0, Freshness::FRESH_BY_RECORD, true], allocated.call(record), "fresh by the stat record"
    end
  end

  test "a trusted file (racy -1) is fresh without a stat: even once it is gone" do
    with_entry do |path, blob|
      File.delete(path)
      assert_equal [:fresh, false, PAYLOAD], judged(blob, path, racy: -1).to_a[0, 3]
      assert_equal [:missing, false, blob], judged(blob, path).to_a[0, 3]
    end
  end

  test "compiled at another path: fresh, moved (the caller relocates from the whole entry)" do
    with_entry do |path, blob|
      other = File.join(File.dirname(path), "b.rb")
      File.symlink(path, other) # the very file the entry's stat describes, under another name
      assert_equal [:fresh, true, blob], judged(blob, other).to_a[0, 3]
    end
  end

  test "a file whose stat does not vouch is UNVOUCHED until its stat record is looked up" do
    with_entry do |path, blob|
      touch(path)
      assert_equal [:unvouched, false, blob, nil], judged(blob, path).to_a[0, 4]
      File.write(path, "A = 10\n") # another size: no record can vouch, so none is asked for
      assert_equal [:stale, false, blob, nil], judged(blob, path).to_a[0, 4]
    end
  end

  test "a stat record for the entry's source digest vouches for a touched file" do
    with_entry do |path, blob|
      id, record = touch(path)
      assert_equal [:fresh_by_record, false, PAYLOAD, record], judged(blob, path, record: record).to_a[0, 4]
      assert_equal :fresh_by_record, judged(blob, path, record: record, racy: 2_000_000_000).verdict
      # Refused records: the file is revalidated by its bytes instead, and the record replaced.
      refused = {
        none: ["", 0],
        racy: [record, 20_000_000_000],
        other_source: [touch(path, digest: 42)[1], 0],
        other_inode: [Entry.dump_stat([id[0], id[1], id[2], id[3] + 1, id[4]], id[2] + 10_000_000_000,
                                      CC::XXH64.file(path)), 0],
        short: [record.byteslice(0, 63), 0]
      }
      refused.each do |why, (bad, racy)|
        result = judged(blob, path, record: bad, racy: racy)
        assert_equal [:revalidated, false, PAYLOAD], result.to_a[0, 3], why.to_s
        refute_nil Entry.load_stat(result.record), why.to_s
      end
      result = judged(blob, path, record: refused[:other_source][0], revalidate: false)
      assert_equal [:stale, false, blob, refused[:other_source][0]], result.to_a[0, 4]
    end
  end

  test "same bytes, moved metadata: revalidated, with the stat record the next judgement accepts" do
    with_entry do |path, blob|
      touch(path)
      before = Freshness.now_ns
      result = judged(blob, path, record: "")
      after = Freshness.now_ns
      id = Freshness.identity(path)
      assert_equal [:revalidated, false, PAYLOAD], result.to_a[0, 3]
      assert_equal Freshness::REVALIDATED | Freshness::RECORDED, result.code
      assert_equal Encoding::BINARY, result.record.encoding
      stat = Entry.load_stat(result.record)
      assert_equal id + [CC::XXH64.file(path)], [stat.size, stat.mtime, stat.ctime, stat.ino, stat.dev, stat.digest]
      assert_operator stat.verified, :>=, before
      assert_operator stat.verified, :<=, after
      assert_equal :fresh_by_record, judged(blob, path, record: result.record.freeze).verdict

      # The new record is written into the String given, never through a buffer it shares.
      [nil, Loadout::BACKEND == :native ? Loadout::Native : nil].uniq.each do |backend|
        touch(path)
        source = ("x" * 64).freeze
        shared = source.dup
        verdict = with_backend(backend) { Freshness.judge(blob.dup, path, 0, false, true, shared) }
        assert_equal [Freshness::REVALIDATED | Freshness::RECORDED, "x" * 64], [verdict, source],
                     "backend #{backend.inspect}"
        refute_nil Entry.load_stat(shared)
      end
    end
  end

  test "a new inode with the same bytes (a fresh clone) is revalidated and moved" do
    with_entry do |path, blob|
      copy = "#{path}.new"
      File.write(copy, SOURCE)
      File.rename(copy, path)
      result = judged(blob, path, record: "")
      assert_equal [:revalidated, true, blob], result.to_a[0, 3]
      assert_equal File.stat(path).ino, Entry.load_stat(result.record).ino
    end
  end

  test "other bytes are stale (same size: by digest; another size: without reading); gone is missing" do
    with_entry do |path, blob|
      File.write(path, SOURCE.sub("1", "2"))
      assert_equal [:stale, false, blob, ""], judged(blob, path, record: "").to_a[0, 4]
      File.write(path, "A = 10\n")
      assert_equal [:stale, false, blob, ""], judged(blob, path, record: "").to_a[0, 4]
      File.delete(path)
      assert_equal [:missing, false, blob, ""], judged(blob, path, record: "").to_a[0, 4]
    end
    with_entry(digest: 42) do |path, blob| # compiled from other bytes
      touch(path)
      assert_equal [:stale, false, blob, ""], judged(blob, path, record: "").to_a[0, 4]
    end
  end

  test "within the racy window of its ctime, an entry is not trusted by its stat alone" do
    with_entry do |path, blob|
      assert_equal :revalidated, judged(blob, path, racy: 20_000_000_000, record: "").verdict
      assert_equal :stale, judged(blob, path, racy: 20_000_000_000, record: "", revalidate: false).verdict
    end
  end

  test "an entry only its stat record can vouch for asks for the record before any stat" do
    with_entry do |path, blob|
      File.delete(path) # a stat now would answer :missing
      # Verified 10 s after its ctime: within a 20 s window it never vouches by itself.
      assert_equal :unvouched, judged(blob, path, racy: 20_000_000_000).verdict
      assert_equal :missing, judged(blob, path, racy: 20_000_000_000, record: "").verdict, "the record path stats"
      assert_equal :missing, judged(blob, path, racy: 2_000_000_000).verdict, "outside the window: the stat first"
    end
  end

  test "negative entries say so with their reason; -w-flagged ones only under -w" do
    with_entry(flags: Entry::NEGATIVE) do |path, blob|
      assert_equal [:negative, false, PAYLOAD], judged(blob, path).to_a[0, 3]
      touch(path)
      result = judged(blob, path, record: "")
      assert_equal [:negative, false, PAYLOAD], result.to_a[0, 3]
      assert_equal Freshness::NEGATIVE | Freshness::RECORDED, result.code
      refute_nil Entry.load_stat(result.record), "the revalidation's record is still worth appending"
    end
    with_entry(flags: Entry::VERBOSE_WARNINGS) do |path, blob|
      assert_equal [:fresh, false, PAYLOAD], judged(blob, path).to_a[0, 3]
      assert_equal [:warns, false, blob], judged(blob, path, verbose: true).to_a[0, 3]
    end
  end

  test "a path with a NUL byte, a non-Integer racy_ns or a record that is not a String is not judged" do
    with_entry do |path, blob|
      assert_nil judged(blob, "#{path}\0")
      assert_nil judged(blob, path, racy: nil)
      assert_nil judged(blob, path, record: 42)
    end
  end

  test "every single damaged byte of the entry is refused or yields exactly its payload's bytes, identically" do
    with_entry do |path, blob|
      blob.bytesize.times do |i|
        bad = blob.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        result = judged(bad.freeze, path, record: "")
        # The payload's bytes are the frame's CRC's to check (a store record, the self cache
        # file), not the judge's: a damaged one is served as it is. Past the payload, only bytes
        # no check reads (padding, the verified time, the source digest while the stat vouches,
        # the realpath) may change and still serve, and then only the payload.
        if %i[fresh fresh_by_record revalidated].include?(result.verdict) && !result.moved
          assert_equal bad.byteslice(0, PAYLOAD.bytesize), result.blob, "byte #{i}"
        end
      end
      assert_equal :corrupt, judged(blob.byteslice(0, blob.bytesize - 1).freeze, path).verdict
    end
  end

  test "every single damaged byte of a stat record is refused or still vouches, identically" do
    with_entry do |path, blob|
      _, record = touch(path)
      record.bytesize.times do |i|
        bad = record.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        result = judged(blob, path, record: bad.freeze)
        # Fresh by the record, or refused and revalidated by the bytes.
        assert_includes %i[fresh_by_record revalidated], result.verdict, "byte #{i}"
        assert_equal PAYLOAD, result.blob, "byte #{i}"
      end
    end
  end

  test "Entries#judge: the stat record comes from the store, and a revalidation's is appended unless read-only" do
    with_entry do |path, blob|
      touch(path)
      [false, true].each do |readonly|
        store = Loadout::TestSupport::CompileCacheStore.open(nil)
        store.put(KEY, blob)
        # racy 0: the record is verified just now, right after the touch moved the ctime
        entries = CC::Entries.new(store, key: CC::Key.new([]), counters: CC::Counters.new, readonly: readonly,
                                         trust: nil, racy_ns: 0)
        puts_before = store.puts
        own = store.get(KEY)
        assert_equal Freshness::REVALIDATED, entries.judge(own, path, KEY, false) & 15
        assert_equal PAYLOAD, own
        assert_equal(readonly ? 0 : 1, store.puts - puts_before)
        next if readonly

        # The next judgement: fresh by that record.
        own = store.get(KEY)
        assert_equal Freshness::FRESH_BY_RECORD, entries.judge(own, path, KEY, false)
        assert_equal PAYLOAD, own
      end
    end
  end

  test "one judgement through Entries stats the file once when its stat vouches, twice when its record decides" do
    skip "native backend only" unless Loadout::BACKEND == :native
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
        blob = File.binread(#{File.join(dir, "blob").dump})
        record = File.binread(#{File.join(dir, "record").dump})
        unvouched = f.judge(blob.dup, #{path.dump}, 0, false, true, nil)
        by_record = f.judge(blob.dup, #{path.dump}, 0, false, true, record)
        revalidated = f.judge(blob.dup, #{path.dump}, 0, false, true, +"")
        print [unvouched, by_record, revalidated].inspect
      RUBY
      log = File.join(dir, "strace.log")
      out, status = Open3.capture2e(strace, "-f", "-qq", "-e", "trace=stat,newfstatat,statx", "-o", log,
                                    RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", script)
      skip "strace cannot trace here (ptrace not permitted)" unless File.exist?(log)
      assert status.success?, out
      expected = [Freshness::UNVOUCHED, Freshness::FRESH_BY_RECORD, Freshness::REVALIDATED | Freshness::RECORDED]
      assert_equal expected.inspect, out
      assert_equal 3, File.readlines(log).count { |l| l.include?("\"#{path}\"") }, File.read(log)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "loadout/compile_cache"

# Entry.revalidated_payload is a CI boot's per-file check (every mtime moved, the bytes did not).
# Native and Ruby twin must agree, serve only the bytes the entry was compiled from, and hand
# back a stat record that lets the next boot's one-call check vouch again.
class CompileCacheRevalidatedPayloadTest < Minitest::Test
  CC = Loadout::CompileCache
  Entry = CC::Entry
  SOURCE = "A = 1\n"

  # An entry for dir/a.rb, compiled from its current bytes, then the file touched (same bytes,
  # new mtime and ctime) so its own stat no longer vouches.
  def with_touched_entry(flags: Entry::RAW, digest: nil, name: "a.rb")
    Dir.mktmpdir("loadout-reval") do |dir|
      path = File.join(dir, name)
      File.write(path, SOURCE)
      past = Time.now - 60
      File.utime(past, past, path)
      id = CC::Digest.identity(path)
      digest ||= CC::Digest.file(path)
      blob = Entry.dump(flags, id, id[2] + 10_000_000_000, digest, "payload bytes " * 20,
                        path: path, realpath: File.realpath(path)).freeze
      later = Time.now - 30
      File.utime(later, later, path)
      yield path, blob, dir
    end
  end

  # [native result, native record, twin result, twin record]; the native one is the twin's when
  # this run has no native backend.
  def both(blob, path, verbose = false)
    native = Entry.instance_variable_get(:@native)
    Entry.instance_variable_set(:@native, nil)
    twin_record = String.new("untouched")
    twin = Entry.revalidated_payload(blob, path, verbose, twin_record)
    Entry.instance_variable_set(:@native, native)
    return [twin, twin_record, twin, twin_record] unless native

    native_record = String.new("untouched")
    [Entry.revalidated_payload(blob, path, verbose, native_record), native_record, twin, twin_record]
  end

  def assert_refused(blob, path, verbose = false)
    native, native_record, twin, twin_record = both(blob, path, verbose)
    assert_nil twin
    assert_nil native, "native and Ruby twin disagree"
    assert_equal ["untouched", "untouched"], [twin_record, native_record]
  end

  test "same bytes, moved metadata: the payload and a stat record the next boot's check accepts" do
    with_touched_entry do |path, blob|
      payload = Entry.load(blob).payload
      assert_nil Entry.fresh_payload(blob, path, 0, false) # the entry's own stat no longer vouches
      before = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
      native, native_record, twin, twin_record = both(blob, path)
      after = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
      assert_equal [payload, payload], [twin, native]

      id = CC::Digest.identity(path)
      [twin_record, native_record].each do |record|
        assert_equal Encoding::BINARY, record.encoding
        stat = Entry.load_stat(record)
        refute_nil stat, record.inspect
        assert_equal id + [CC::Digest.file(path)], [stat.size, stat.mtime, stat.ctime, stat.ino, stat.dev, stat.digest]
        assert_operator stat.verified, :>=, before
        assert_operator stat.verified, :<=, after
        assert_equal payload, Entry.fresh_payload(blob, path, 0, false, record.freeze)
      end
      # The records differ only in the verification time.
      assert_equal twin_record.byteslice(0, 32) + twin_record.byteslice(40, 24),
                   native_record.byteslice(0, 32) + native_record.byteslice(40, 24)
    end
  end

  test "a same-size edit, another size, another path, a negative or -w-flagged entry are refused" do
    with_touched_entry do |path, blob|
      assert_refused blob, "#{path}x"
      assert_refused blob, "#{path}\0"
      File.write(path, SOURCE.sub("1", "2")) # same size, other bytes
      assert_refused blob, path
      File.write(path, "A = 10\n")
      assert_refused blob, path
      File.delete(path)
      assert_refused blob, path
    end
    with_touched_entry(digest: 42) { |path, blob| assert_refused blob, path } # compiled from other bytes
    with_touched_entry(flags: Entry::NEGATIVE) { |path, blob| assert_refused blob, path }
    with_touched_entry(flags: Entry::VERBOSE_WARNINGS) do |path, blob|
      refute_nil both(blob, path)[0]
      assert_refused blob, path, true
    end
  end

  test "a new inode (a fresh clone) is served while the realpath is the recorded one" do
    with_touched_entry do |path, blob|
      payload = Entry.load(blob).payload
      copy = "#{path}.new"
      File.write(copy, SOURCE)
      File.rename(copy, path)
      native, native_record, twin, = both(blob, path)
      assert_equal [payload, payload], [twin, native]
      assert_equal File.stat(path).ino, Entry.load_stat(native_record).ino
    end
  end

  test "a symlink retargeted to a same-content file elsewhere is refused (its realpath moved)" do
    Dir.mktmpdir("loadout-reval-link") do |dir|
      real = File.join(dir, "real.rb")
      File.write(real, SOURCE)
      link = File.join(dir, "link.rb")
      File.symlink(real, link)
      id = CC::Digest.identity(link)
      blob = Entry.dump(Entry::RAW, id, id[2] + 10_000_000_000, CC::Digest.file(link), "payload",
                        path: link, realpath: real).freeze
      other = File.join(dir, "other.rb")
      File.write(other, SOURCE)
      File.delete(link)
      File.symlink(other, link)
      assert_refused blob, link
      File.delete(link)
      File.symlink(real, link) # back to the recorded realpath: same inode as recorded
      refute_nil both(blob, link)[0]
    end
  end

  test "a frozen record buffer or a non-String argument is refused without a crash" do
    with_touched_entry do |path, blob|
      assert_raises(FrozenError) { Entry.revalidated_payload(blob, path, false, String.new.freeze) }
      assert_nil Entry.revalidated_payload(blob, path, false, nil)
      assert_nil Entry.revalidated_payload(blob, nil, false, String.new)
    end
  end

  test "every single damaged byte of the entry is refused or still yields the intact payload, identically" do
    with_touched_entry do |path, blob|
      payload = Entry.load(blob).payload
      blob.bytesize.times do |i|
        bad = blob.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        native, native_record, twin, = both(bad.freeze, path)
        twin.nil? ? assert_nil(native, "byte #{i}") : assert_equal(twin, native, "byte #{i}")
        next unless twin

        # Only bytes no check reads (padding, mtime, ctime, verified, the realpath when the inode
        # is unchanged) may change and still serve, and then only the stored payload itself.
        assert_equal payload, twin, "byte #{i}"
        refute_nil Entry.load_stat(native_record), "byte #{i}"
      end
    end
  end
end

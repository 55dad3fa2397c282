# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "open3"
require "rbconfig"
require "loadout/compile_cache"

# Entry.fresh_payload is the warm hit's one-call check. Its native version and its Ruby twin must
# agree on every entry, intact or damaged, and both must refuse whatever the full path (Entry.load
# + Validator) would not serve as a plain fresh hit.
class CompileCacheFreshPayloadTest < Minitest::Test
  CC = Loadout::CompileCache
  Entry = CC::Entry

  def with_entry(flags: Entry::RAW)
    Dir.mktmpdir("loadout-fresh") do |dir|
      path = File.join(dir, "a.rb")
      File.write(path, "A = 1\n")
      past = Time.now - 60
      File.utime(past, past, path)
      id = CC::Digest.identity(path)
      # Verified well after the ctime, as a boot after the racy window would have recorded it.
      verified = id[2] + 10_000_000_000
      blob = Entry.dump(flags, id, verified, 42, "payload bytes " * 20, path: path, realpath: path)
      yield path, blob.freeze, id
    end
  end

  # Both implementations of fresh_payload on the same arguments.
  def both(blob, path, racy = 0, verbose = false, record = nil)
    ruby = Entry.instance_variable_get(:@native)
    Entry.instance_variable_set(:@native, nil)
    twin = Entry.fresh_payload(blob, path, racy, verbose, record)
    Entry.instance_variable_set(:@native, ruby)
    native = ruby ? Entry.fresh_payload(blob, path, racy, verbose, record) : twin
    [native, twin]
  end

  def assert_agree(expected, blob, path, racy = 0, verbose = false, record = nil)
    native, twin = both(blob, path, racy, verbose, record)
    assert_same_result twin, native, "native and Ruby twin disagree"
    assert_same_result expected, twin
  end

  def assert_same_result(expected, actual, message = nil)
    expected.nil? ? assert_nil(actual, message) : assert_equal(expected, actual, message)
  end

  test "an intact, fresh entry compiled at the path gives its payload; the twin agrees" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      assert_agree payload, blob, path
      assert_agree payload, blob, path, 2_000_000_000
    end
  end

  test "an unfrozen entry becomes its payload in place; a frozen one gives a slice; a refusal touches neither" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      ruby = Entry.instance_variable_get(:@native)
      [nil, ruby].uniq.each do |native|
        Entry.instance_variable_set(:@native, native)
        own = blob.dup
        refused = blob.dup
        assert_nil Entry.fresh_payload(refused, "#{path}x", 0, false)
        assert_equal blob, refused
        served = Entry.fresh_payload(own, path, 0, false)
        assert_same own, served, "backend #{native ? :native : :ruby}"
        assert_equal payload, own
        sliced = Entry.fresh_payload(blob, path, 0, false)
        assert_equal payload, sliced
        refute_same blob, sliced
      ensure
        Entry.instance_variable_set(:@native, ruby)
      end
    end
  end

  test "racy, moved, touched, negative or -w-flagged entries are left to the full path" do
    with_entry do |path, blob|
      assert_agree nil, blob, path, 20_000_000_000 # verified inside the racy window
      assert_agree nil, blob, path, -1
      assert_agree nil, blob, "#{path}x"
      assert_agree nil, blob, "#{path}\0"
      File.write(path, "A = 2\n")
      assert_agree nil, blob, path
    end
    with_entry(flags: Entry::NEGATIVE) { |path, blob| assert_agree nil, blob, path }
    with_entry(flags: Entry::VERBOSE_WARNINGS) do |path, blob|
      refute_nil both(blob, path)[0]
      assert_agree nil, blob, path, 0, true
    end
  end

  # The file touched (same bytes, new mtime and ctime, as after a git checkout) and the stat
  # record a revalidation would append for it, verified 10 s after the new ctime.
  def touched_with_record(path, digest: 42)
    past = Time.now - 30
    File.utime(past, past, path)
    id = CC::Digest.identity(path)
    [id, Entry.dump_stat(id, id[2] + 10_000_000_000, digest).freeze]
  end

  test "a stat record for the entry's source digest vouches for a touched file; the twin agrees" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      id, record = touched_with_record(path)
      assert_agree nil, blob, path # the entry's own stat no longer matches
      assert_agree payload, blob, path, 0, false, record
      assert_agree payload, blob, path, 2_000_000_000, false, record
      assert_agree nil, blob, path, 20_000_000_000, false, record # the record is inside the racy window
      assert_agree nil, blob, path, 0, false, touched_with_record(path, digest: 43)[1] # another source
      assert_agree nil, blob, path, 0, false, Entry.dump_stat([id[0], id[1], id[2], id[3] + 1, id[4]], id[2] + 10_000_000_000, 42)
      assert_agree nil, blob, path, 0, false, record.byteslice(0, 63)
      assert_agree nil, blob, path, 0, false, 42
      File.write(path, "A = 2\n") # same size, new content: its stat matches no record
      assert_agree nil, blob, path, 0, false, record
    end
  end

  test "the follow-up call with the stat record reuses the first call's stat of the same file" do
    skip "native backend only" unless Entry.instance_variable_get(:@native)
    strace = ENV.fetch("PATH", "").split(":").map { |d| "#{d}/strace" }.find { |f| File.executable?(f) }
    skip "strace is not installed" unless strace
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      _, record = touched_with_record(path)
      files = { "blob" => blob, "record" => record }.to_h { |name, bytes| [name, File.join(File.dirname(path), name)] }
      File.binwrite(files["blob"], blob)
      File.binwrite(files["record"], record)
      script = <<~RUBY
        require "loadout/compile_cache"
        e = Loadout::CompileCache::Entry
        blob = File.binread(#{files["blob"].dump}).freeze
        record = File.binread(#{files["record"].dump}).freeze
        first = e.fresh_payload(blob, #{path.dump}, 0, false)
        second = e.fresh_payload(blob, #{path.dump}, 0, false, record)
        later = e.fresh_payload(blob, #{path.dump}, 0, false, record)
        print [first.nil?, second.bytesize, later.bytesize].inspect
      RUBY
      log = File.join(File.dirname(path), "strace.log")
      out, status = Open3.capture2e(strace, "-f", "-qq", "-e", "trace=stat,newfstatat,statx", "-o", log,
                                    RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", script)
      skip "strace cannot trace here (ptrace not permitted)" unless File.exist?(log)
      assert status.success?, out
      assert_equal [true, payload.bytesize, payload.bytesize].inspect, out
      # One stat for the first call and its follow-up, one for the later, unrelated call.
      assert_equal 2, File.readlines(log).count { |l| l.include?("\"#{path}\"") }, File.read(log)
    end
  end

  test "every single damaged byte of a stat record is refused or still vouches, identically" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      _, record = touched_with_record(path)
      record.bytesize.times do |i|
        bad = record.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        native, twin = both(blob, path, 0, false, bad.freeze)
        assert_same_result twin, native, "byte #{i}"
        assert_equal payload, twin, "byte #{i}" if twin
      end
    end
  end

  test "every single damaged byte is refused or still yields the intact payload, identically" do
    with_entry do |path, blob|
      payload = Entry.load(blob).payload
      blob.bytesize.times do |i|
        bad = blob.dup
        bad.setbyte(i, bad.getbyte(i) ^ 0x10)
        native, twin = both(bad.freeze, path)
        assert_same_result twin, native, "byte #{i}"
        # Only the unused bytes (padding, the source digest, the realpath) may change and still
        # serve, and then only the stored payload itself.
        assert_equal payload, twin, "byte #{i}" if twin
      end
      assert_agree nil, blob.byteslice(0, blob.bytesize - 1).freeze, path
    end
  end
end

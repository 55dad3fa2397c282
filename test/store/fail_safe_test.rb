# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"

# Bad environments: with fail_safe the caches get one warning and a read-only or empty store,
# never an exception; without it, one clear StoreError naming the path and the fix.
class StoreFailSafeTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers
  Format = Loadout::Store.const_get(:Format)

  def require_tmpfs!
    skip "cannot mount a tmpfs in a private namespace here (unshare -r -m failed)" unless unshare_mount_works?
  end

  # ENOSPC ---------------------------------------------------------------------------------------

  ENOSPC_SCRIPT = <<~RUBY
    require "loadout"
    path = File.join(ENV["MNT"], "cache", "s.store")
    s = Loadout::Store.open(path, fail_safe: ENV["FAIL_SAFE"] == "1")
    acked = 0
    error = nil
    begin
      400.times do |i|
        s.put("k\#{i}", "v" * 1500)
        break unless s.writable?
        acked += 1
      end
    rescue Loadout::StoreError => e
      error = e
    end
    entries, good_end, corrupt, = Loadout::Store.const_get(:Format).parse(File.binread(path), 0)
    puts "acked=\#{acked} writable=\#{s.writable?} clean=\#{good_end == File.size(path) && corrupt.zero?}"
    puts "error=\#{error.message}" if error
    s.close
    r = Loadout::Store.open(path, readonly: true)
    puts "readable=\#{(0...acked).all? { |i| r.get("k\#{i}") == "v" * 1500 }}"
    if error
      File.unlink(path + ".hint") if File.exist?(path + ".hint")
      Dir.glob(File.join(ENV["MNT"], "filler*")).each { |f| File.unlink(f) }
      # Space came back: the same store accepts appends again.
      w = Loadout::Store.open(path)
      w.delete("k0")
      w.put("again", "ok")
      w.close
      puts "after_space=\#{Loadout::Store.open(path, readonly: true).get("again")}"
    end
  RUBY

  test "ENOSPC with fail_safe: one warning, then read-only; nothing partial left behind" do
    require_tmpfs!
    res = run_in_tmpfs(ENOSPC_SCRIPT, size: "256k", env: { "FAIL_SAFE" => "1" })
    assert res.success?, res.stderr
    assert_match(/acked=\d+ writable=false clean=true/, res.stdout)
    assert_operator res.stdout[/acked=(\d+)/, 1].to_i, :>, 10
    assert_match(/readable=true/, res.stdout)
    warnings = res.stderr.lines.grep(/loadout:/)
    assert_equal 1, warnings.size, res.stderr
    assert_match(%r{cache store .*/cache/s\.store: no space left on the device \(ENOSPC\); free some disk space},
                 warnings[0])
  end

  test "ENOSPC without fail_safe raises StoreError, truncates back, and recovers when space returns" do
    require_tmpfs!
    res = run_in_tmpfs(ENOSPC_SCRIPT, size: "256k",
                                      setup: "dd if=/dev/zero of=$MNT/filler bs=1k count=100 2>/dev/null &&")
    assert res.success?, res.stderr
    assert_match(/writable=true clean=true/, res.stdout)
    assert_match(/error=store .*s\.store: no space left on the device \(ENOSPC\)/, res.stdout)
    assert_match(/readable=true/, res.stdout)
    assert_match(/after_space=ok/, res.stdout)
  end

  # EROFS ----------------------------------------------------------------------------------------

  test "EROFS: fail_safe serves what it can read; without it open raises" do
    require_tmpfs!
    script = <<~RUBY
      require "loadout"
      path = File.join(ENV["MNT"], "s.store")
      s = Loadout::Store.open(path, fail_safe: true)
      s.put("k", "v")
      print "writable=", s.writable?, " get=", s.get("k").inspect, " "
      s.put("k2", "v2")
      begin
        Loadout::Store.open(path)
      rescue Loadout::StoreError => e
        print "raised=", e.message.include?("read-only (EROFS)")
      end
      r = Loadout::Store.open(path, readonly: true)
      print " readonly_get=", r.get("k").inspect
    RUBY
    seed = <<~SH.tr("\n", " ")
      #{RbConfig.ruby} -I #{Loadout::TestSupport::Subprocess::LIB} -e 'require "loadout";
      Loadout::Store.open(File.join(ENV["MNT"], "s.store")) { |s| s.put("k", "v") }' &&
      mount -o remount,ro $MNT &&
    SH
    res = run_in_tmpfs(script, setup: seed)
    assert res.success?, res.stderr
    assert_equal 'writable=false get="v" raised=true readonly_get="v"', res.stdout
    warnings = res.stderr.lines.grep(/loadout:/)
    assert_equal 1, warnings.size, res.stderr
    assert_match(/read-only \(EROFS\)/, warnings[0])
  end

  # EACCES ---------------------------------------------------------------------------------------

  # Runs the block as an unprivileged user (root ignores file modes).
  def as_unprivileged(&block)
    in_child do
      if Process.uid.zero?
        Process::GID.change_privilege(65_534)
        Process::UID.change_privilege(65_534)
      end
      block.call
    end
  end

  test "EACCES: an unwritable store is served read-only, an uncreatable one is empty" do
    with_files do |dir|
      File.chmod(0o755, dir)
      path = File.join(dir, "s.store")
      Loadout::Store.open(path) { |s| s.put("k", "v") }
      File.chmod(0o644, path)
      File.chmod(0o555, dir) unless Process.uid.zero?
      log = File.join(Dir.tmpdir, "loadout-eacces-#{Process.pid}.log")
      status = as_unprivileged do
        $stderr.reopen(log, "w")
        s = Loadout::Store.open(path, fail_safe: true)
        raise "expected read-only, got #{s.inspect}" if s.writable?
        raise "lost value" unless s.get("k") == "v"

        s.put("x", "y")
        raise "put reached memory" if s.get("x")

        fresh = Loadout::Store.open(File.join(dir, "sub", "new.store"), fail_safe: true)
        raise "expected empty" unless fresh.size.zero? && !fresh.writable?

        begin
          Loadout::Store.open(path)
          raise "no error"
        rescue Loadout::StoreError => e
          raise e.message unless e.message.include?("permission denied (EACCES)") && e.message.include?(path)
        end
      end
      warnings = File.read(log).lines
      File.unlink(log)
      assert status.success?, warnings.join
      assert_equal 2, warnings.size, "one warning per store:\n#{warnings.join}"
      assert_match(/#{Regexp.escape(path)}: permission denied \(EACCES\); make .* writable/, warnings[0])
    end
  end

  # Other environments ---------------------------------------------------------------------------

  test "a directory where the store file should be" do
    with_files([["s.store/"]]) do |dir|
      path = File.join(dir, "s.store")
      err = assert_raises(Loadout::StoreError) { Loadout::Store.open(path) }
      assert_match(/is a directory/, err.message)
      res = run_ruby!(<<~RUBY, args: [path])
        require "loadout"
        s = Loadout::Store.open(ARGV[0], fail_safe: true)
        s.put("k", "v")
        print s.size, " ", s.writable?, " ", s.get("k").inspect
      RUBY
      assert_equal "0 false nil", res.stdout
      assert_equal 1, res.stderr.lines.grep(/loadout: cache store .*s\.store: is a directory/).size, res.stderr
    end
  end

  test "a file where the store directory should be" do
    with_files([["cache", "not a dir"]]) do |dir|
      res = run_ruby!(<<~RUBY, args: [File.join(dir, "cache", "s.store")])
        require "loadout"
        s = Loadout::Store.open(ARGV[0], fail_safe: true, defer_writes: true)
        s.put("k", "v")
        s.flush
        print s.writable?
      RUBY
      assert_equal "false", res.stdout
      assert_equal 1, res.stderr.lines.grep(/loadout: cache store/).size, res.stderr
    end
  end

  test "corrupt records: one warning with fail_safe, the rest is served and writable" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      final, = write_small_store(path)
      bytes = File.binread(path)
      at = bytes.index(final["key-3"])
      bytes.setbyte(at, bytes.getbyte(at) ^ 0xFF)
      File.binwrite(path, bytes)
      res = run_ruby!(<<~RUBY, args: [path])
        require "loadout"
        s = Loadout::Store.open(ARGV[0], fail_safe: true)
        s.put("new", "1")
        print s.get("key-3").inspect, " ", s.get("key-4").bytesize, " ", s.writable?, " ", s.stats[:corrupt_records]
      RUBY
      assert_equal "nil 20 true 1", res.stdout
      assert_equal 1, res.stderr.lines.grep(/1 corrupt record skipped/).size, res.stderr
    end
  end

  test "fail_safe never raises from put, get or close when the file vanishes" do
    with_files do |dir|
      path = File.join(dir, "c", "s.store")
      s = Loadout::Store.open(path, fail_safe: true)
      s.put("a", "1")
      FileUtils.rm_rf(File.join(dir, "c"))
      File.write(File.join(dir, "c"), "now a file")
      _, err = capture_io do
        s.put("b", "2")
        s.compact
        s.close
      end
      assert_equal 1, err.lines.grep(/loadout:/).size, err
    end
  end

  # A fault of no I/O kind (the RangeError an index value too big to unpack once raised, a bug):
  # fail_safe still degrades with one warning; without it the error propagates as it is.
  module ReadFault
    def read_value(*)
      raise RangeError, "injected"
    end
  end

  module HintFault
    class << self
      attr_accessor :on
    end

    def write(*args)
      raise RangeError, "injected" if HintFault.on

      super
    end
  end
  Loadout::Store.const_get(:Hint).prepend(HintFault)

  test "fail_safe survives errors of any kind from get and close; without it they propagate" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      Loadout::Store.open(path) { |s| s.put("a", "1") }
      HintFault.on = true
      s = Loadout::Store.open(path, fail_safe: true)
      s.instance_variable_get(:@file).extend(ReadFault)
      _, err = capture_io do
        assert_nil s.get("a")
        s.put("b", "2")
        s.close # writes the hint: raises
      end
      assert_equal 1, err.lines.grep(/loadout: cache store .*RangeError: injected/).size, err

      strict = Loadout::Store.open(path)
      strict.instance_variable_get(:@file).extend(ReadFault)
      assert_raises(RangeError) { strict.get("a") }
      strict.put("c", "3")
      assert_raises(RangeError) { strict.close }
    ensure
      HintFault.on = false
    end
  end

  test "a value over the limit: ArgumentError, or with fail_safe the key is dropped (its old value never served)" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      Loadout::Store.open(path, fail_safe: true) do |safe|
        safe.put("a", "old")
        safe.put("a", "x" * (Format::MAX_VALUE + 1))
        assert_nil safe.get("a")
        assert safe.writable?
      end
      Loadout::Store.open(path) do |plain|
        plain.put("a", "old")
        assert_raises(ArgumentError) { plain.put("a", "x" * (Format::MAX_VALUE + 1)) }
        assert_equal "old", plain.get("a")
      end
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"

class JournalTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers
  CRASH_TRIALS = [Integer(ENV.fetch("LOADOUT_STRESS_TRIALS", "100")) / 4, 5].max
  Format = Loadout::Store.const_get(:Format)

  def with_journal(sync: :flush)
    with_files do |dir|
      path = File.join(dir, "events")
      journal = Loadout::Journal.open(path, sync: sync)
      begin
        yield journal, path
      ensure
        journal.close
      end
    end
  end

  def segments(path)
    Dir.children(path).grep(/\Asegment-/).sort
  end

  test "append returns growing ids; pending is appended minus acked, in order" do
    %i[none flush fsync batch].each do |mode|
      with_journal(sync: mode) do |j, _|
        ids = Array.new(10) { |i| j.append("event #{i} \xFF".b) }
        assert_equal ids.sort, ids
        assert_equal ids.uniq, ids
        j.ack(ids[0])
        j.ack(ids[5])
        expected = ids.each_with_index.reject { |_, i| [0, 5].include?(i) }.map { |id, i| [id, "event #{i} \xFF".b] }
        assert_equal expected, j.pending, mode.inspect
      end
    end
  end

  test "pending and ids survive a restart and a rotate" do
    with_journal do |j, path|
      ids = Array.new(5) { |i| j.append("e#{i}") }
      j.ack(ids[1])
      j.close
      j2 = Loadout::Journal.open(path, sync: :flush)
      assert_equal [ids[0], ids[2], ids[3], ids[4]], j2.pending.map(&:first)
      more = j2.append("later")
      assert_operator more, :>, ids.max
      j2.ack(ids[0])
      j2.rotate
      assert_equal 1, segments(path).size
      assert_equal [ids[2], ids[3], ids[4], more], j2.pending.map(&:first)
      ids.each { |id| j2.ack(id) }
      j2.ack(more)
      j2.rotate
      assert_empty j2.pending
      j2.close
      j3 = Loadout::Journal.open(path, sync: :flush)
      assert_operator j3.append("after everything was acked and rotated away"), :>, more
      j3.close
    end
  end

  test "ids are never reused after kill -9, even in :none" do
    skip "no fork on #{RUBY_ENGINE}" unless Process.respond_to?(:fork)
    with_files do |dir|
      path = File.join(dir, "events")
      last = 0
      3.times do
        r, w = IO.pipe
        pid = fork do
          r.close
          j = Loadout::Journal.open(path, sync: :none)
          1000.times { w.syswrite("#{j.append("x" * 20)}\n") }
          sleep 10
        end
        w.close
        ids = []
        ids << r.gets.to_i until ids.size == 1000
        Process.kill(:KILL, pid)
        Process.wait(pid)
        assert_operator ids.min, :>, last, "an id was handed out twice"
        last = ids.max
      end
      Loadout::Journal.open(path, sync: :none) { |j| assert_operator j.append("x"), :>, last }
    end
  end

  test "kill -9 under :flush: pending equals appended minus acked" do
    skip "no fork on #{RUBY_ENGINE}" unless Process.respond_to?(:fork)
    with_files do |dir|
      path = File.join(dir, "events")
      rng = Random.new
      appended = {}
      acked = {}
      CRASH_TRIALS.times do |trial|
        r, w = IO.pipe
        pid = fork do
          r.close
          j = Loadout::Journal.open(path, sync: :flush)
          w.syswrite("open\n")
          seq = 0
          loop do
            seq += 1
            id = j.append("payload-#{seq}")
            w.syswrite("a #{id} #{seq}\n")
            if id.odd?
              j.ack(id)
              w.syswrite("k #{id}\n")
            end
          end
        rescue Exception => e # rubocop:disable Lint/RescueException
          w.syswrite("error #{e.class}: #{e.message}\n")
          exit!(1)
        end
        w.close
        r.gets
        sleep(rng.rand * 0.008)
        Process.kill(:KILL, pid)
        Process.wait(pid)
        r.read.to_s.each_line do |line|
          kind, id, seq = line.split
          flunk line if kind == "error"
          (kind == "a" ? appended : acked)[id.to_i] = "payload-#{seq}"
        end
        r.close
        entries = Loadout::Journal.open(path, sync: :flush) do |j|
          j.rotate if (trial % 5) == 4 # rotation keeps exactly the pending entries
          j.pending
        end
        damaged = entries.reject { |id, payload| appended[id].nil? || appended[id] == payload }
        assert_empty damaged, "payloads changed"
        pending = entries.map(&:first)
        expected = appended.keys - acked.keys
        missing = expected - pending
        extra = pending - expected
        # The one operation in flight at the kill may or may not have reached the file.
        assert_operator missing.size, :<=, 1, "acknowledged entries lost: #{missing.first(5)}"
        assert missing.all?(&:odd?), "only an in-flight ack may remove an entry: #{missing}"
        assert_operator extra.size, :<=, 1, "entries that were never acknowledged: #{extra.first(5)}"
        assert_empty pending & acked.keys, "acked entries came back"
        acked[missing.first] = true unless missing.empty?
        appended[extra.first] = entries.assoc(extra.first)[1] unless extra.empty?
      end
      assert_operator appended.size, :>, 30
    end
  end

  test "a torn tail is cut on open and the next append survives" do
    with_journal do |j, path|
      j.append("one")
      j.append("two")
      j.close
      seg = File.join(path, segments(path).last)
      File.truncate(seg, File.size(seg) - 3)
      Loadout::Journal.open(path) do |j2|
        assert_equal ["one"], j2.pending.map(&:last)
        j2.append("three")
      end
      Loadout::Journal.open(path) { |j3| assert_equal %w[one three], j3.pending.map(&:last) }
    end
  end

  test "a damaged record in the middle of a segment is counted and warned about once, a torn tail is not" do
    with_journal do |j, path|
      j.append("first payload")
      j.append("second payload")
      j.append("third payload")
      j.close
      seg = File.join(path, segments(path).last)
      bytes = File.binread(seg)
      at = bytes.index("second payload")
      bytes.setbyte(at, bytes.getbyte(at) ^ 0x20) # the body CRC no longer matches
      File.binwrite(seg, bytes)
      out, err = capture_io do
        Loadout::Journal.open(path) do |j2|
          assert_equal 1, j2.corrupt_records
          assert_equal ["first payload", "third payload"], j2.pending.map(&:last)
        end
      end
      assert_empty out
      assert_equal 1, err.scan(/loadout: journal .*1 damaged record/).size, err
      assert_includes err, File.basename(seg)

      File.binwrite(seg, File.binread(seg) + Format.frame_id_into(+"".b, Format::PUT, 99, "torn")[0, 30])
      _, err = capture_io { Loadout::Journal.open(path) { |j3| assert_equal 1, j3.corrupt_records } }
      assert_equal 1, err.scan(/damaged record/).size, "the torn tail adds nothing: #{err}"
    end
  end

  test "a journal opened without damage reports no corrupt records and warns nothing" do
    with_journal do |j, path|
      j.append("one")
      j.close
      _, err = capture_io { Loadout::Journal.open(path) { |j2| assert_equal 0, j2.corrupt_records } }
      assert_empty err
    end
  end

  test ":none flushes on normal exit and on SIGTERM, and SIGTERM ends the process as it would without it" do
    with_files do |dir|
      script = <<~RUBY
        require "loadout"
        at_exit { puts "at_exit" }
        if ARGV[0] != "none"
          j = Loadout::Journal.open(ARGV[0], sync: :none)
          500.times { |i| j.append("e\#{i}") }
        end
        if ARGV[1] == "term"
          $stdout.puts "ready"
          $stdout.flush
          sleep 30
        end
      RUBY
      run_ruby!(script, args: [File.join(dir, "exit"), "exit"])
      Loadout::Journal.open(File.join(dir, "exit")) { |j| assert_equal 500, j.pending.size }

      # Without a journal, then with one: the same exit status and at_exit behaviour (CRuby runs
      # at_exit and dies of TERM; JRuby exits 143 without at_exit), and the journal is written.
      plain, with = ["none", File.join(dir, "term")].map do |target|
        io = IO.popen([RbConfig.ruby, "-I", Loadout::TestSupport::Subprocess::LIB, "-e", script, target, "term"])
        assert_equal "ready\n", io.gets
        Process.kill(:TERM, io.pid)
        rest = io.read
        io.close
        [rest, $?.termsig, $?.exitstatus]
      end
      assert_equal plain, with
      Loadout::Journal.open(File.join(dir, "term")) { |j| assert_equal 500, j.pending.size }
    end
  end

  test ":batch shares one sync between appends that arrive together; :fsync syncs each" do
    skip "strace is not installed" unless system("strace -V >/dev/null 2>&1")
    with_files do |dir|
      script = <<~RUBY
        require "loadout"
        j = Loadout::Journal.open(ARGV[0], sync: ARGV[1].to_sym)
        4.times.map { Thread.new { 50.times { j.append("x" * 200) } } }.each(&:join)
        j.close
      RUBY
      counts = %w[fsync batch].to_h do |mode|
        _, err, = Open3.capture3("strace", "-f", "-qq", "-e", "trace=fdatasync,fsync", RbConfig.ruby,
                                 "-I", Loadout::TestSupport::Subprocess::LIB, "-e", script, File.join(dir, mode), mode)
        [mode, err.scan(/(?:fdatasync|fsync)\(/).size]
      end
      assert_operator counts["fsync"], :>=, 200, counts.inspect
      assert_operator counts["batch"], :<, counts["fsync"], counts.inspect
      Loadout::Journal.open(File.join(dir, "batch")) { |j| assert_equal 200, j.pending.size }
    end
  end

  test "an fdatasync error is fatal, not retried" do
    skip "strace is not installed" unless system("strace -V >/dev/null 2>&1")
    with_files do |dir|
      script = <<~RUBY
        require "loadout"
        j = Loadout::Journal.open(ARGV[0], sync: :fsync)
        begin
          j.append("a")
          puts "no error"
        rescue Loadout::JournalError => e
          puts e.message
        end
        begin
          j.append("b")
        rescue Loadout::JournalError
          puts "still failed"
        end
      RUBY
      syscall = Loadout::BACKEND == :native ? "fdatasync" : "fsync"
      # The first sync (of the new segment's header) succeeds; the append's sync fails with EIO.
      out, err, = Open3.capture3("strace", "-f", "-qq", "-o", "/dev/null", "-e", "inject=#{syscall}:error=EIO:when=2+",
                                 RbConfig.ruby, "-I", Loadout::TestSupport::Subprocess::LIB, "-e", script,
                                 File.join(dir, "j"))
      assert_match(/fdatasync failed: Input\/output error/, out, err)
      assert_match(/still failed/, out)
    end
  end

  test "bad sync option raises ConfigError naming the accepted values" do
    with_files do |dir|
      err = assert_raises(Loadout::ConfigError) { Loadout::Journal.open(dir, sync: :always) }
      assert_match(/:none, :flush, :fsync, :batch/, err.message)
    end
  end

  test "bad environments raise one JournalError naming the path and the fix" do
    with_files([["file", "x"], ["j/segment-0000000001.log/"]]) do |dir|
      e1 = assert_raises(Loadout::JournalError) { Loadout::Journal.open(File.join(dir, "file")) }
      assert_match(%r{journal .*/file: a file is in the way \(EEXIST\)}, e1.message)
      e2 = assert_raises(Loadout::JournalError) { Loadout::Journal.open(File.join(dir, "j")) }
      assert_match(/is a directory/, e2.message)

      newer = File.join(dir, "newer")
      Dir.mkdir(newer)
      head = [Format::MAGIC, Format::FORMAT_VERSION + 1, 0, 1, 1].pack("a2CCVV")
      File.binwrite(File.join(newer, "segment-0000000001.log"), head + [Format.crc32c(head), 0].pack("VV") + "kv")
      e3 = assert_raises(Loadout::JournalError) { Loadout::Journal.open(newer) }
      assert_match(/newer loadout/, e3.message)

      held = Loadout::Journal.open(File.join(dir, "held"))
      e4 = assert_raises(Loadout::JournalLockedError) { Loadout::Journal.open(File.join(dir, "held")) }
      assert_match(/is open in another process/, e4.message)
      held.close
    end
  end

  test "EACCES raises JournalError" do
    with_files do |dir|
      File.chmod(0o755, dir)
      log = File.join(Dir.tmpdir, "loadout-j-eacces-#{Process.pid}.log")
      status = in_child do
        if Process.uid.zero?
          Process::GID.change_privilege(65_534)
          Process::UID.change_privilege(65_534)
        end
        begin
          Loadout::Journal.open(File.join(dir, "events"))
        rescue Loadout::JournalError => e
          File.write(log, e.message)
        end
      end
      assert status.success?
      assert_match(/journal .*events: permission denied \(EACCES\)/, File.read(log))
      File.unlink(log)
    end
  end

  test "ENOSPC and EROFS raise JournalError; what was acknowledged stays" do
    skip "cannot mount a tmpfs in a private namespace here (unshare -r -m failed)" unless unshare_mount_works?
    script = <<~RUBY
      require "loadout"
      dir = File.join(ENV["MNT"], "events")
      j = Loadout::Journal.open(dir, sync: :flush)
      acked = 0
      begin
        10_000.times { j.append("e" * 1000); acked += 1 }
      rescue Loadout::JournalError => e
        puts "error: \#{e.message}"
      end
      begin
        j.append("more")
      rescue Loadout::JournalError
        puts "still failed"
      end
      j.close
      File.unlink(File.join(ENV["MNT"], "filler"))
      Loadout::Journal.open(dir) do |j2|
        puts "pending=\#{j2.pending.size == acked} acked=\#{acked}"
        j2.append("after space returned")
      end
      system("mount", "-o", "remount,ro", ENV["MNT"]) or raise "remount failed"
      begin
        Loadout::Journal.open(dir)
      rescue Loadout::JournalError => e
        puts "ro: \#{e.message}"
      end
    RUBY
    res = run_in_tmpfs(script, size: "256k", setup: "dd if=/dev/zero of=$MNT/filler bs=1k count=64 2>/dev/null &&")
    assert res.success?, res.stderr
    assert_match(/error: journal .*events: write failed: No space left on device/, res.stdout)
    assert_match(/still failed/, res.stdout)
    assert_match(/pending=true acked=\d+/, res.stdout)
    assert_match(/ro: journal .*events: the file system is read-only \(EROFS\)/, res.stdout)
  end

  test "a forked child cannot append to its parent's journal" do
    with_journal(sync: :none) do |j, _|
      j.append("parent")
      status = in_child do
        j.append("child")
        exit!(3)
      rescue Loadout::JournalError
        exit!(0)
      end
      assert status.success?
      assert_equal ["parent"], j.pending.map(&:last)
    end
  end
end

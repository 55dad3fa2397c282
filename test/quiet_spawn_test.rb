# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "loadout/quiet_spawn"
require "open3"
require "rbconfig"
require "socket"

# QuietSpawn starts the compile cache's background worker. Its native version (posix_spawn) and
# its twin (Process.spawn) must hand the child the same argv, environment, stdio and signals, and
# nothing else of the caller's: no other descriptor, no other variable, not its working directory.
class QuietSpawnTest < Minitest::Test
  # What a child started by +backend+ sees: its argv, two environment variables, where its
  # stdio points, and its ignored/blocked signal masks.
  def child_view(backend, dir)
    out = File.join(dir, "#{backend}.out")
    # The shell's own descriptors, read before any redirection of its own.
    script = "fds=$(for fd in 0 1 2; do readlink /proc/$$/fd/$fd; done); " \
             "{ printf '%s|' \"$@\" \"$QS_ADDED\" \"$QS_REPLACED\"; echo; echo \"$fds\"; " \
             "grep -E '^Sig(Ign|Blk)' /proc/self/status; } > #{out}"
    with_backend(backend) do
      pid = Loadout::QuietSpawn.call({ "QS_ADDED" => "a b", "QS_REPLACED" => "new" },
                                     ["/bin/sh", "-c", script, "sh", "one arg", "$HOME", "*"])
      Process.wait(pid)
      assert $?.success?
    end
    File.read(out)
  end

  NATIVE = Loadout::QuietSpawn.instance_variable_get(:@native)
  BACKENDS = NATIVE ? %i[ruby native] : %i[ruby]

  def with_backend(backend)
    Loadout::QuietSpawn.instance_variable_set(:@native, backend == :native)
    yield
  ensure
    Loadout::QuietSpawn.instance_variable_set(:@native, NATIVE)
  end

  test "argv verbatim (no shell), exactly the env given, stdio on /dev/null; native and twin agree" do
    Dir.mktmpdir("loadout-spawn") do |dir|
      old = trap("USR2", "IGNORE")
      ENV["QS_REPLACED"] = "old"
      views = BACKENDS.map { |backend| child_view(backend, dir) }
      lines = views.first.lines
      assert_equal "one arg|$HOME|*|a b|new|\n", lines[0]
      assert_equal ["/dev/null\n"] * 3, lines[1, 3]
      ignored = Integer(lines.grep(/SigIgn/).first.split.last, 16)
      assert_equal 1, (ignored >> (Signal.list["USR2"] - 1)) & 1, "an ignored signal stays ignored (nohup)"
      assert_equal 0, Integer(lines.grep(/SigBlk/).first.split.last, 16), "no signal blocked"
      # glibc's posix_spawn leaves its two internal signals (32, 33) ignored across exec; a glibc
      # program installs its own handlers for them at start, so only the other bits must agree.
      internal = 0b11 << 31
      comparable = views.map do |v|
        v.sub(/^SigIgn:\s*(\h+)/) { "SigIgn: #{(Integer(Regexp.last_match(1), 16) & ~internal).to_s(16)}" }
      end
      assert_equal comparable.first, comparable.last, "native and Ruby twin disagree"
    ensure
      ENV.delete("QS_REPLACED")
      trap("USR2", old || "DEFAULT")
    end
  end

  test "the child holds nothing else of the caller's: no descriptor, no variable, not its working directory" do
    Dir.mktmpdir("loadout-spawn") do |dir|
      r, w = IO.pipe
      w.close_on_exec = false
      server = TCPServer.new("127.0.0.1", 0)
      server.close_on_exec = false
      ENV["QS_CALLER_ONLY"] = "1"
      BACKENDS.each do |backend|
        out = File.join(dir, "#{backend}.out")
        script = "{ for fd in #{w.fileno} #{server.fileno}; do [ -e /proc/$$/fd/$fd ] && echo \"held $fd\"; done; " \
                 "echo \"cwd=$(readlink /proc/$$/cwd) caller=${QS_CALLER_ONLY:-unset}\"; } > #{out}; exec sleep 30"
        pid = with_backend(backend) { Loadout::QuietSpawn.call({ "QS_GIVEN" => "1" }, ["/bin/sh", "-c", script]) }
        begin
          sleep 0.02 until File.exist?(out) && File.read(out).include?("cwd=")
          assert_equal "cwd=/ caller=unset\n", File.read(out), "#{backend}: no descriptor held, cwd /, own env"
        ensure
          Process.kill(:KILL, pid)
          Process.wait(pid)
        end
      end
    ensure
      ENV.delete("QS_CALLER_ONLY")
      [r, w, server].each { |io| io&.close }
    end
  end

  test "a pipe the caller left without close-on-exec reaches EOF while the child still runs" do
    BACKENDS.each do |backend|
      r, w = IO.pipe
      w.close_on_exec = false
      pid = with_backend(backend) { Loadout::QuietSpawn.call({}, ["/bin/sleep", "30"]) }
      begin
        w.close
        assert IO.select([r], nil, nil, 20), "#{backend}: no EOF, the child holds the pipe"
        assert_equal "", r.read
        assert_nil Process.wait(pid, Process::WNOHANG), "the child is still running"
      ensure
        Process.kill(:KILL, pid)
        Process.wait(pid)
        r.close
      end
    end
  end

  test "the environment helpers keep only what running Ruby needs" do
    saved = ENV.to_h.slice("RUBYOPT", "LC_ALL")
    ENV["RUBYOPT"] = "-rsomething"
    ENV["LC_ALL"] = "C.UTF-8"
    env = Loadout::QuietSpawn.environment("LOADOUT_DISABLE" => "1")
    refute env.key?("RUBYOPT")
    assert_equal "C.UTF-8", env["LC_ALL"]
    assert_equal "1", env["LOADOUT_DISABLE"]
    assert_equal ENV["PATH"], env["PATH"]
  ensure
    %w[RUBYOPT LC_ALL].each { |name| ENV[name] = saved[name] }
  end

  test "the native start does not copy the caller (a vfork-style clone, not a fork)" do
    skip "native backend only" unless NATIVE
    strace = ENV.fetch("PATH", "").split(":").map { |d| "#{d}/strace" }.find { |f| File.executable?(f) }
    skip "strace is not installed" unless strace
    Dir.mktmpdir("loadout-spawn-trace") do |dir|
      log = File.join(dir, "trace.log")
      script = 'require "loadout/quiet_spawn"; Process.wait(Loadout::QuietSpawn.call({}, ["/bin/true"]))'
      out, status = Open3.capture2e(strace, "-qq", "-e", "trace=clone,clone3,fork,vfork", "-o", log,
                                    RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "-e", script)
      skip "strace cannot trace here (ptrace not permitted)" unless File.exist?(log)
      assert status.success?, out
      starts = File.readlines(log).grep(/\A(clone|clone3|fork|vfork)\(/).reject { |l| l.include?("CLONE_THREAD") }
      assert_equal 1, starts.size, File.read(log)
      assert_match(/CLONE_VM/, starts.first)
      assert_match(/CLONE_VFORK/, starts.first)
    end
  end

  test "a missing program raises ENOENT and a relative one ArgumentError, on both backends" do
    BACKENDS.each do |backend|
      with_backend(backend) do
        assert_raises(Errno::ENOENT) { Loadout::QuietSpawn.call({}, ["/nonexistent/loadout-program"]) }
        error = assert_raises(ArgumentError) { Loadout::QuietSpawn.call({}, ["sh", "-c", "true"]) }
        assert_includes error.message, "absolute path"
      end
    end
  end
end

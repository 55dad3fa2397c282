# frozen_string_literal: true

require "test_helper"
require "socket"
require "support/trust_boot"
require "loadout/store"

# The background compile worker a cold boot spawns at exit never hangs and never holds what is
# not its own: a FIFO in its queue is skipped, it inherits no descriptor (a pipe the app's parent
# reads, a listening socket), no RUBYOPT, no working directory, and it has a time budget. Each
# test fails on the worker as it was (a hang, a held pipe or port, a preloaded file).
class CompileWorkerTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  # A cold boot of the app; +body+ runs after setup. With stop_worker: the worker is started as
  # `sleep 30` (through the same QuietSpawn.call, so with the same descriptors, environment and
  # cwd), so whatever it was handed stays held while the test looks.
  def program(body, stop_worker: false)
    stop = <<~'RUBY'
      require "loadout/quiet_spawn"
      Loadout::QuietSpawn.singleton_class.prepend(Module.new do
        def call(env, _argv)
          pid = super(env, ["/bin/sleep", "30"])
          $stderr.puts "worker=#{pid}"
          pid
        end
      end)
    RUBY
    <<~RUBY
      require "loadout"
      #{stop if stop_worker}
      Loadout.setup(cache_dir: ENV["T_CACHE"], root: ENV["T_APP"])
      %w[a b].each { |f| require File.join(ENV["T_APP"], "lib", f) }
      #{body}
    RUBY
  end

  # The program gets a process group of its own, so its worker can be waited for.
  def run_program(app, cache, code, env: {}, chdir: app, pgroup: true, **opts)
    env = clean_env({ "T_APP" => app, "T_CACHE" => cache }.merge(env))
    Open3.popen3(env, RbConfig.ruby, "-I", LIB, "-e", code, chdir: chdir, pgroup: pgroup, **opts) do |i, o, e, t|
      i.close
      out = Thread.new { o.read }
      err = Thread.new { e.read }
      flunk "the program hung" unless t.join(60)
      [out.value, err.value, t.value]
    end
  end

  # Waits for the worker (it stays in the program's process group); kills it and fails if it is
  # still running after 30 s.
  def assert_worker_finishes(pgid)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    sleep 0.05 while group_alive?(pgid) && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    return unless group_alive?(pgid)

    Process.kill(:KILL, -pgid)
    flunk "the compile worker was still running after 30 s"
  end

  # The app's files that have an ISeq entry ("~/lib/a.rb", ...).
  def stored_app_files(cache)
    Loadout::Store.open(File.join(cache, "store"), readonly: true) do |s|
      s.each.map { |k, _| k[%r{\Acc/i/\h+/(~/.*)\z}, 1] }.compact.sort
    end
  end

  def kill_worker(err)
    pid = err[/^worker=(\d+)$/, 1] or return
    Process.kill(:KILL, pid.to_i)
  rescue Errno::ESRCH
    nil
  end

  test "a FIFO queued by an interrupted load is skipped: the worker finishes and compiles the rest" do
    with_trust_app do |app, cache|
      fifo = File.join(app, "lib/fifo.rb")
      File.mkfifo(fifo)
      code = program(<<~RUBY)
        begin
          # Interrupted once it blocks opening the FIFO (no writer ever comes), as Ruby's own tests do.
          Thread.new { sleep 0.01 until Thread.main.status == "sleep"; Thread.main.raise(Interrupt) }
          load #{fifo.dump}
        rescue Interrupt
          puts "interrupted"
        end
      RUBY
      out, err, status = run_program(app, cache, code)
      assert_equal "interrupted\n", out.lines.last, err
      assert_worker_finishes(status.pid)
      assert_equal ["~/lib/a.rb", "~/lib/b.rb"], stored_app_files(cache), "a.rb and b.rb compiled, the FIFO skipped"
      assert_equal [], Dir.glob(File.join(cache, "*.jobs"))
    end
  end

  test "the worker holds no descriptor of the app's: the app's parent sees EOF on its pipe while the worker lives" do
    with_trust_app do |app, cache|
      r, w = IO.pipe
      # (Written through /proc: an IO object for fd 7 could change its close-on-exec flag.)
      code = program("File.write('/proc/self/fd/7', \"from the app\\n\")", stop_worker: true)
      _out, err, status = run_program(app, cache, code, 7 => w)
      w.close
      assert status.success?, err
      worker = err[/^worker=(\d+)$/, 1].to_i
      assert_operator worker, :>, 0, err
      assert_equal "from the app\n", r.gets
      assert IO.select([r], nil, nil, 30), "no EOF on the app's pipe: the worker holds its write end"
      assert_raises(EOFError) { r.read_nonblock(1) }
      refute_equal "Z", File.read("/proc/#{worker}/stat").split(") ", 2).last[0], "the worker is still alive"
    ensure
      r&.close
      w&.close unless w&.closed?
      kill_worker(err.to_s)
    end
  end

  test "a listening socket the app left open across exec is not inherited by the worker" do
    with_trust_app do |app, cache|
      code = program(<<~'RUBY', stop_worker: true)
        server = TCPServer.new("127.0.0.1", 0)
        server.close_on_exec = false
        puts server.addr[1]
      RUBY
      out, err, status = run_program(app, cache, "require 'socket'\n#{code}")
      assert status.success?, err
      port = out.lines.last.to_i
      assert_operator err[/^worker=(\d+)$/, 1].to_i, :>, 0, err
      TCPServer.new("127.0.0.1", port).close # EADDRINUSE if the stopped worker held the socket
    ensure
      kill_worker(err.to_s)
    end
  end

  test "RUBYOPT=-r<file> of the app is not loaded into the worker" do
    with_trust_app do |app, cache|
      log = File.join(File.dirname(app), "preloaded.log")
      marker = File.join(File.dirname(app), "marker.rb")
      File.write(marker, "File.open(#{log.dump}, 'a') { |f| f.puts Process.pid }\n")
      _out, err, status = run_program(app, cache, program(""), env: { "RUBYOPT" => "-r#{marker}" })
      assert status.success?, err
      assert_worker_finishes(status.pid)
      assert_equal ["~/lib/a.rb", "~/lib/b.rb"], stored_app_files(cache), "the worker ran"
      assert_equal [status.pid.to_s], File.readlines(log, chomp: true), "only the app preloaded the file"
    end
  end

  test "a program whose working directory was deleted still gets its misses compiled, and no job file stays" do
    with_trust_app do |app, cache|
      gone = File.join(File.dirname(app), "gone")
      Dir.mkdir(gone)
      code = "Dir.rmdir(#{gone.dump})\n#{program("")}"
      # Under bundler/setup, as apps run: Bundler asks for the working directory when it starts.
      bundler = { "RUBYOPT" => "-rbundler/setup", "BUNDLE_GEMFILE" => File.expand_path("../../Gemfile", __dir__) }
      _out, err, status = run_program(app, cache, code, chdir: gone, env: bundler)
      assert status.success?, err
      assert_worker_finishes(status.pid)
      assert_equal ["~/lib/a.rb", "~/lib/b.rb"], stored_app_files(cache)
      assert_equal [], Dir.glob(File.join(cache, "*.jobs"))
    end
  end
end

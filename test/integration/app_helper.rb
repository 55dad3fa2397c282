# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"

module Loadout
  module TestSupport
    # Boots copies of test/fixtures/app in child Rubies with a controlled environment: the test
    # process runs under `bundle exec`, whose variables must not leak into the app's boot.
    module App
      FIXTURE = File.expand_path("../fixtures/app", __dir__)
      LIB = File.expand_path("../../lib", __dir__)
      LEAKY = %w[RUBYOPT RUBYLIB BUNDLE_GEMFILE BUNDLE_BIN_PATH BUNDLER_VERSION BUNDLER_SETUP GEM_HOME
                 RAILS_ENV RACK_ENV FIXTURE_WITHOUT_LOADOUT].freeze

      # Every variable that could change a boot, unset; LOADOUT_PURE is kept (backend under test).
      def clean_env(extra = {})
        env = ENV.keys.grep(/\ALOADOUT_/).to_h { |k| [k, nil] }
        LEAKY.each { |k| env[k] = nil }
        env["LOADOUT_PURE"] = ENV["LOADOUT_PURE"]
        env["LOADOUT_QUIET_BACKEND"] = "1"
        env.merge(extra)
      end

      # Yields the real path of a fresh copy of the fixture app.
      def with_app
        with_files do |tmp|
          app = File.join(tmp, "app")
          FileUtils.cp_r(FIXTURE, app)
          FileUtils.chmod_R("a+rX", tmp)
          FileUtils.chmod("a+rwx", tmp)
          yield app
        end
      end

      def root?
        Process.uid.zero?
      end

      # Runs ruby ARGS in +chdir+; as an unprivileged user when asked (root ignores chmod 000).
      def spawn_ruby(*args, env: {}, chdir: Dir.pwd, unprivileged: false, read_only: nil)
        as_nobody = unprivileged && root?
        cmd = [RbConfig.ruby, "-I", as_nobody ? App.readable_lib : LIB, *args]
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd] if as_nobody
        if read_only
          # A private mount namespace where +read_only+ is a read-only bind mount (EROFS).
          cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', read_only, *cmd]
        end
        out, err, status = Open3.capture3(clean_env(env), *cmd, chdir: chdir, pgroup: true)
        wait_for_group(status.pid)
        Loadout::TestSupport::Subprocess::Result.new(out, err, status)
      end

      # A copy of lib/ that any user can read, made once per test process: the checkout may sit
      # under a directory the unprivileged user may not enter (a 0700 /root, as in a fresh CI box).
      def self.readable_lib
        @readable_lib ||= begin
          dir = Dir.mktmpdir("loadout-lib")
          at_exit { FileUtils.rm_rf(dir) }
          FileUtils.cp_r(LIB, dir)
          FileUtils.chmod_R("a+rX", dir)
          File.join(dir, "lib")
        end
      end

      # loadout starts no process, but whatever a boot leaves running in its process group (an
      # app's own child, or a regression) must not race the next boot or the tmpdir cleanup.
      def wait_for_group(pgid)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
        while group_alive?(pgid)
          if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
            raise "a process of group #{pgid} still running after 60 s"
          end

          sleep 0.02
        end
      end

      # A process of the group still running (zombies waiting for init to reap them do not count).
      def group_alive?(pgid)
        unless File.directory?("/proc/self")
          Process.kill(0, -pgid)
          return true
        end

        Dir.children("/proc").any? do |entry|
          next false unless entry.match?(/\A\d+\z/)

          fields = File.read("/proc/#{entry}/stat").split(") ", 2).last.split
          fields[0] != "Z" && fields[2].to_i == pgid
        rescue SystemCallError
          false
        end
      rescue Errno::ESRCH, Errno::EPERM
        false
      end

      def boot_app(app, env: {}, unprivileged: false, read_only: nil)
        spawn_ruby("boot.rb", env: env, chdir: app, unprivileged: unprivileged, read_only: read_only)
      end

      # True when this process may make read-only mounts (root, with unshare).
      def can_mount_read_only?
        return @can_ro if defined?(@can_ro)

        @can_ro = root? && system("unshare", "-m", "--propagation", "private", "true", out: File::NULL, err: File::NULL)
      end

      def boot_app!(app, **kw)
        result = boot_app(app, **kw)
        assert result.success?, "fixture app failed to boot (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
        result
      end

      # stderr lines loadout printed (the fixture itself prints nothing there).
      def loadout_lines(stderr)
        stderr.lines.grep(/loadout/)
      end

      # The stdout of the app booted without loadout at all: what every loadout boot must print.
      def plain_output(app)
        boot_app!(app, env: { "FIXTURE_WITHOUT_LOADOUT" => "1" }).stdout.sub(/^loadout=off\n/, "")
      end

      def without_marker(stdout)
        stdout.sub(/^loadout=(on|off)\n/, "")
      end
    end
  end
end

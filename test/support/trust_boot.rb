# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "integration/app_helper"

module Loadout
  module TestSupport
    # Boots a small app with Loadout.setup in a child Ruby that counts every
    # RubyVM::InstructionSequence.load_from_binary call (the only way a cached ISeq, planted or
    # not, can run), and plants or tampers with its cache as another user (setpriv) or as root.
    module TrustBoot
      include App

      NOBODY = 65_534
      USERS_GID = 100 # "users": a group that is nobody's private group

      # Counts load_from_binary before loadout loads, then sets up and loads the app's files.
      PROGRAM = <<~'RUBY'
        $lfb = 0
        RubyVM::InstructionSequence.singleton_class.prepend(Module.new do
          def load_from_binary(*args)
            $lfb += 1
            super
          end
        end)
        require "loadout"
        options = { cache_dir: ENV["T_CACHE"], root: ENV["T_APP"] }
        options[:trust_shared_cache] = true if ENV["T_SHARED"] == "1"
        Loadout.setup(**options)
        %w[a b].each { |f| require File.join(ENV["T_APP"], "lib", f) }
        $stderr.puts "lfb=#{$lfb}"
      RUBY

      Boot = Struct.new(:stdout, :stderr, :status, :lfb) do
        def warnings
          stderr.lines.grep(/loadout/)
        end
      end

      # Yields [app, cache dir] in a fresh tmp dir (0700, root's) whose app is readable by anyone.
      def with_trust_app(cache: "tmp/cache/loadout")
        with_files do |tmp|
          app = File.join(tmp, "app")
          FileUtils.mkdir_p(File.join(app, "lib"))
          File.write(File.join(app, "lib/a.rb"), "puts \"a ran as \#{Process.uid}\"\n")
          File.write(File.join(app, "lib/b.rb"), "B = [__FILE__, __LINE__].inspect\nputs B\n")
          FileUtils.chmod_R("a+rX", app)
          File.chmod(0o755, tmp)
          yield app, File.expand_path(cache, app)
        end
      end

      # Runs PROGRAM (as root); fails the test if it has not finished after 60 s (a hang), and waits
      # for the background worker it may leave. Extra env: T_SHARED=1 for trust_shared_cache.
      def trust_boot(app, cache, env: {})
        cmd = [RbConfig.ruby, "-I", LIB, "-e", PROGRAM]
        run_with_deadline(clean_env({ "T_APP" => app, "T_CACHE" => cache }.merge(env)), cmd, app)
      end

      # The cold boot, its worker, and a warm boot that must read the cache (the control).
      def warm_up(app, cache, env: {})
        trust_boot(app, cache, env: env)
        warm = trust_boot(app, cache, env: env)
        assert_operator warm.lfb, :>, 0, "a trusted warm cache is read:\n#{warm.stderr}"
        assert_equal [], warm.warnings
        warm
      end

      # What the app prints without loadout.
      def plain_stdout(app)
        "a ran as 0\n#{[File.join(app, "lib/b.rb"), 1].inspect}\n"
      end

      # A boot that refused the cache: the app's own output, one warning about +path+ and not one
      # load_from_binary call.
      def assert_refused(boot, app, path, pattern)
        assert_equal plain_stdout(app), boot.stdout
        assert_equal 0, boot.lfb, "nothing may be loaded from a refused cache:\n#{boot.stderr}"
        assert_equal 1, boot.warnings.size, boot.stderr
        assert_includes boot.warnings.first, path
        assert_match pattern, boot.warnings.first
      end

      # Every file of the cache dir with its bytes (symlinks and special files by type), to prove
      # a refused cache is not written.
      def cache_snapshot(cache)
        Dir.glob(File.join(cache, "*"), File::FNM_DOTMATCH).sort.to_h do |f|
          st = File.lstat(f)
          [f, st.file? ? File.binread(f) : st.ftype]
        end
      end

      # Lets others through the directories from the app down to +dir+ (loadout makes them 0700),
      # optionally for +gid+ only (0750 and that group).
      def open_path_to(app, dir, gid: nil)
        path = app
        dir.delete_prefix("#{app}/").split("/").each do |part|
          path = File.join(path, part)
          File.chown(nil, gid, path) if gid
          File.chmod(gid ? 0o750 : 0o755, path) unless path == dir
        end
      end

      # Runs ruby +script+ (ARGV: +args+) as nobody, with +groups+ as its supplementary groups.
      def as_nobody(script, args = [], groups: [])
        groups_arg = groups.empty? ? "--clear-groups" : "--groups=#{groups.join(",")}"
        cmd = ["setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", groups_arg, RbConfig.ruby, "-I", LIB, "-e", script,
               *args]
        out, err, status = Open3.capture3(clean_env, *cmd, chdir: "/")
        assert status.success?, "as nobody: #{out}#{err}"
        out
      end

      private

      def run_with_deadline(env, cmd, chdir)
        Open3.popen3(env, *cmd, chdir: chdir, pgroup: true) do |stdin, stdout, stderr, thread|
          stdin.close
          out_reader = Thread.new { stdout.read }
          err_reader = Thread.new { stderr.read }
          [out_reader, err_reader].each { |t| t.report_on_exception = false }
          unless thread.join(60)
            Process.kill(:KILL, -thread.pid)
            flunk "the boot hung (killed after 60 s): #{cmd.last(2).inspect}"
          end
          wait_for_group(thread.pid)
          err = err_reader.value
          Boot.new(out_reader.value, err.gsub(/^lfb=\d+\n/, ""), thread.value, err[/^lfb=(\d+)$/, 1]&.to_i)
        end
      end
    end
  end
end

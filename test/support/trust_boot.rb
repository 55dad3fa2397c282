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
        if (from = ENV["T_SWAP"]) # after setup, the cache dir is renamed away and a symlink put in its place
          swap = "File.rename(ARGV[0], ARGV[0] + '.away'); File.symlink(ARGV[1], ARGV[0])"
          system("setpriv", "--reuid=#{ENV["T_SWAP_AS"]}", "--regid=#{ENV["T_SWAP_AS"]}", "--clear-groups",
                 RbConfig.ruby, "-e", swap, from, ENV["T_SWAP_TO"], exception: true)
        end
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

      # Runs PROGRAM (as root, or as +user+: [uid, gid]); fails the test if it has not finished
      # after 60 s (a hang), and waits for its process group. Extra env:
      # T_SHARED=1 for trust_shared_cache. +user_db+: run with these /etc/passwd, /etc/group (and
      # /etc/nsswitch.conf) texts (see #user_db_prefix).
      def trust_boot(app, cache, env: {}, user: nil, user_db: nil)
        cmd = [RbConfig.ruby, "-I", user ? App.readable_lib : LIB, "-e", PROGRAM]
        cmd = ["setpriv", "--reuid=#{user[0]}", "--regid=#{user[1]}", "--clear-groups", *cmd] if user
        cmd = user_db_prefix(File.dirname(app), **user_db) + cmd if user_db
        run_with_deadline(clean_env({ "T_APP" => app, "T_CACHE" => cache }.merge(env)), cmd, app)
      end

      # Whether this process can give a child its own mount namespace (root, with unshare), where
      # the user and group databases can be replaced without touching the machine's.
      def can_unshare_mounts?
        return @can_unshare if defined?(@can_unshare)

        @can_unshare = Process.uid.zero? &&
                       system("unshare", "-m", "--propagation", "private", "true", out: File::NULL, err: File::NULL)
      end

      # A command prefix running the rest in a private mount namespace where /etc/passwd,
      # /etc/group and (when given) /etc/nsswitch.conf are bind mounts of these texts (written
      # under +dir+, readable by anyone).
      def user_db_prefix(dir, passwd:, group:, nsswitch: nil)
        files = { "/etc/passwd" => passwd, "/etc/group" => group }
        files["/etc/nsswitch.conf"] = nsswitch if nsswitch
        mounts = files.each_with_index.map do |(target, text), i|
          source = File.join(dir, "user-db-#{i}")
          File.write(source, text)
          File.chmod(0o644, source)
          "mount --bind #{source} #{target}"
        end
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "#{mounts.join(" && ")} && exec \"$@\"", "sh"]
      end

      # Runs ruby +script+ (ARGV: +args+) as uid/gid (a primary group only: no supplementary
      # groups, as setpriv --regid gives a process and useradd -g gives a user).
      def as_user(uid, gid, script, args = [])
        cmd = ["setpriv", "--reuid=#{uid}", "--regid=#{gid}", "--clear-groups", RbConfig.ruby, "-I", App.readable_lib,
               "-e", script, *args]
        out, err, status = Open3.capture3(clean_env, *cmd, chdir: "/")
        assert status.success?, "as #{uid}:#{gid}: #{out}#{err}"
        out
      end

      # Run as the other user: appends to the store at ARGV[0] a record whose entry for ARGV[1]
      # (an app file) runs code that prints "PWNED as <uid>" (planted with the compile cache's
      # own API: it passes every freshness check of the file). Raw bytes: no trust rule asked.
      PLANT_RECORD = <<~'RUBY'
        require "loadout"
        require "loadout/store"
        require "loadout/compile_cache"
        store, target, evil_dir = ARGV
        cc = Loadout::CompileCache
        evil = File.join(evil_dir, "evil.rb")
        File.write(evil, "puts \"PWNED as \#{Process.uid}\"\n")
        options = RubyVM::InstructionSequence.compile_option
        key = cc::Key.new([File.dirname(File.dirname(target))])
        variant = key.variant(:iseq, options.sort_by { |k, _| k.to_s }.inspect)
        binary = cc::ISeqBinary.rewrite(RubyVM::InstructionSequence.compile_file(evil, options).to_binary,
                                        { evil => target }, labels: true)
        identity = cc::Freshness.identity(target)
        verified = identity[2] + 10_000_000_000
        entry = cc::Entry.dump(cc::Entry::RAW, identity, verified, cc::XXH64.digest(File.binread(target)), binary,
                               path: target, realpath: target)
        format = Loadout::Store.const_get(:Format)
        record = format.frame_into(String.new(encoding: Encoding::BINARY), format::PUT, key.for("i", variant, target).b,
                                   entry)
        File.open(store, File::WRONLY | File::APPEND) { |f| f.write(record) }
        puts "planted"
      RUBY

      # Run as the other user: rewrites the self cache file ARGV[0] in place (its owner and mode
      # stay) with one entry, for loadout's own file ARGV[1] (keyed by its path under the lib dir),
      # that prints "PWNED as <uid>" and then does what the file does.
      PLANT_SELF = <<~'RUBY'
        require "loadout"
        require "loadout/compile_cache"
        require "loadout/self_cache"
        self_file, target, evil_dir = ARGV
        cc = Loadout::CompileCache
        evil = File.join(evil_dir, "evil_self.rb")
        File.write(evil, "puts \"PWNED as \#{Process.uid}\"\n" + File.read(target))
        options = RubyVM::InstructionSequence.compile_option
        binary = cc::ISeqBinary.rewrite(RubyVM::InstructionSequence.compile_file(evil, options).to_binary,
                                        { evil => target }, labels: true)
        identity = cc::Freshness.identity(target)
        verified = identity[2] + 10_000_000_000
        entry = cc::Entry.dump(cc::Entry::RAW, identity, verified, cc::XXH64.digest(File.binread(target)), binary,
                               path: target, realpath: target)
        File.open(self_file, File::WRONLY | File::TRUNC) { |f| f.write(Loadout::SelfCache.dump([[target.delete_prefix(Loadout::SelfCache::LIB_PREFIX), entry, 0]])) }
        puts "planted"
      RUBY

      # A directory anyone may write (the planting user's scratch space) beside the app.
      def evil_dir(app)
        dir = File.join(File.dirname(app), "evil")
        FileUtils.mkdir_p(dir)
        File.chmod(0o777, dir)
        dir
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

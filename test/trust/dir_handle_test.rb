# frozen_string_literal: true

require "test_helper"
require "loadout/trust"

# Trust::DirHandle: once open, names are resolved in the directory it opened, not through its
# path, in each way it can resolve them: the descriptor (native openat & co), /proc/self/fd/N
# (the pure-Ruby twin on Linux) and, without /proc, the path checked before each step (which
# refuses to go on once the path names another directory).
class TrustDirHandleTest < Minitest::Test
  WAYS = { descriptor: { native: true }, proc: { native: false }, path: { native: false, proc_fs: false } }.freeze

  WAYS.each do |name, way|
    test "#{name}: files are made, read, renamed, listed and removed in the dir opened, after its path is swapped" do
      skip "the native extension is not loaded" if way[:native] && Loadout::BACKEND != :native
      with_files do |tmp|
        dir = File.join(tmp, "cache")
        other = File.join(tmp, "other")
        Dir.mkdir(dir, 0o700)
        Dir.mkdir(other, 0o700)
        handle = Loadout::Trust::DirHandle.open(dir, false, **way)
        assert_equal name, handle.resolution
        assert handle.write_atomically("before", "0")
        File.rename(dir, "#{dir}.moved")
        File.symlink(other, dir)
        if name == :path
          assert_raises(Errno::ESTALE) { handle.open("a", File::WRONLY | File::CREAT) }
          refute handle.write_atomically("a", "1")
          assert_empty Dir.children(other)
          next
        end

        assert handle.write_atomically("a", "1")
        io = handle.create("b", File::WRONLY)
        io.write("2")
        io.close
        assert_equal 0o600, File.stat("#{dir}.moved/b").mode & 0o777
        assert_raises(Errno::EEXIST) { handle.create("b", File::WRONLY) }
        handle.rename("b", "c")
        handle.unlink("before")
        assert_equal "1", handle.read("a")
        assert_nil handle.read("missing")
        io, st = handle.open_checked("c", File::RDONLY)
        assert st.file?
        assert handle.same_file?("c", io)
        refute handle.same_file?("a", io)
        io.close
        assert_equal %w[a c], handle.children.sort
        assert_equal Encoding::BINARY, handle.children.first.encoding
        assert_empty Dir.children(other), "nothing through the symlink that replaced the path"
        assert_equal %w[a c], Dir.children("#{dir}.moved").sort
      ensure
        handle&.close
      end
    end

    test "#{name}: a symlink, a FIFO or another user's file in the directory is refused as opened" do
      skip "the native extension is not loaded" if way[:native] && Loadout::BACKEND != :native
      with_files do |dir|
        File.write(File.join(dir, "target"), "secret")
        File.symlink(File.join(dir, "target"), File.join(dir, "link"))
        File.mkfifo(File.join(dir, "fifo"))
        File.write(File.join(dir, "theirs"), "x")
        File.chown(65_534, nil, File.join(dir, "theirs"))
        handle = Loadout::Trust::DirHandle.open(dir, false, **way)
        assert_raises(Errno::ELOOP) { handle.open("link", File::RDONLY) }
        refused = assert_raises(Loadout::Trust::Refused) { handle.open_checked("link", File::RDONLY) }
        assert_equal :symlink, refused.report[0]
        assert_equal :symlink, assert_raises(Loadout::Trust::Refused) { handle.read("link") }.report[0]
        assert_equal :not_regular, assert_raises(Loadout::Trust::Refused) { handle.read("fifo") }.report[0]
        refused = assert_raises(Loadout::Trust::Refused) { handle.open_checked("theirs", File::RDONLY) }
        assert_equal [:owner, File.join(dir, "theirs")], refused.report.first(2)
        assert_equal :owner, handle.lstat_problem("theirs")[0]
        assert_nil handle.lstat_problem("target")
        assert_raises(Errno::EEXIST) { handle.create("link", File::WRONLY) } # never written through
        assert_equal "secret", File.read(File.join(dir, "target"))
      ensure
        handle&.close
      end
    end
  end

  test "check_dir: the directory held open is the one the walk passed, and must pass the rule itself" do
    with_files do |tmp|
      dir = File.join(tmp, "cache")
      Dir.mkdir(dir, 0o700)
      report, handle = Loadout::Trust.check_dir(dir, nil, false)
      assert_nil report
      assert_equal File.stat(dir).ino, handle.stat.ino
      handle.close
      File.chmod(0o777, dir)
      report, handle = Loadout::Trust.check_dir(dir, nil, false)
      assert_nil handle
      assert_equal [:other_writable, dir], report.first(2)
      report, = Loadout::Trust.check_dir(File.join(tmp, "missing"), nil, false)
      assert_equal :missing, report[0]
    end
  end
end

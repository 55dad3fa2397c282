# frozen_string_literal: true

require "test_helper"
require "timeout"

# The Journal replays what it holds into the program, so its directory follows the cache's
# trust rule: a directory (or parent) another user could write, or a file that is a symlink, a
# FIFO or another user's, raises JournalError before anything is read.
class JournalTrustTest < Minitest::Test
  NOBODY = 65_534

  def refused(dir, pattern)
    error = Timeout.timeout(20) { assert_raises(Loadout::JournalError) { Loadout::Journal.open(dir) } }
    assert_match pattern, error.message
    error
  end

  def journal_with_entry(dir)
    Loadout::Journal.open(dir) { |j| j.append("payload") }
    File.join(dir, "segment-0000000001.log")
  end

  test "a journal dir writable by others, or owned by another user, is refused" do
    with_files do |tmp|
      dir = File.join(tmp, "events")
      journal_with_entry(dir)
      File.chmod(0o777, dir)
      error = refused(dir, /writable by others .*mode 0777/)
      assert_includes error.message, "chmod o-w #{dir}"
      File.chmod(0o700, dir)
      File.chown(NOBODY, nil, dir)
      refused(dir, /owned by another user/)
      File.chown(0, nil, dir)
      Loadout::Journal.open(dir) { |j| assert_equal ["payload"], j.pending.map(&:last) }
    end
  end

  test "a parent writable by others is refused; a sticky world-writable one (like /tmp) ends the check" do
    with_files do |tmp|
      parent = File.join(tmp, "spool")
      dir = File.join(parent, "events")
      journal_with_entry(dir)
      File.chmod(0o777, parent)
      refused(dir, /#{Regexp.escape(parent)} is writable by others/)
      File.chmod(0o1777, parent)
      Loadout::Journal.open(dir, &:close)
    end
  end

  test "a segment or LOCK that is a symlink, a FIFO or another user's is refused without blocking" do
    with_files do |tmp|
      dir = File.join(tmp, "events")
      segment = journal_with_entry(dir)
      saved = "#{tmp}/saved"
      FileUtils.cp(segment, saved)
      File.unlink(segment)
      File.symlink(saved, segment)
      refused(dir, /segment-0000000001.log is a symlink/)
      File.unlink(segment)
      File.mkfifo(segment)
      refused(dir, /is a FIFO, not a regular file/)
      File.unlink(segment)
      FileUtils.cp(saved, segment)
      File.chown(NOBODY, nil, segment)
      refused(dir, /owned by another user/)
      File.chown(0, nil, segment)
      lock = File.join(dir, "LOCK")
      File.unlink(lock)
      File.symlink(saved, lock)
      refused(dir, /LOCK is a symlink/)
    end
  end

  test "a new journal's directory is 0700 and its files 0600, whatever the umask" do
    with_files do |tmp|
      umask = File.umask(0)
      dir = File.join(tmp, "a/b")
      journal_with_entry(dir)
      File.umask(umask)
      assert_equal [0o700], [dir, File.dirname(dir)].map { |d| File.stat(d).mode & 0o777 }.uniq
      assert_equal [0o600], Dir.glob(File.join(dir, "*")).map { |f| File.stat(f).mode & 0o777 }.uniq
    ensure
      File.umask(umask) if umask
    end
  end
end

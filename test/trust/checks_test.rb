# frozen_string_literal: true

require "test_helper"
require "loadout/trust"

# Loadout::Trust's two checks, read (a file as opened) and walk (a directory and its parents),
# on every case the rule names. Native and Ruby twin must give the same report for each.
class TrustChecksTest < Minitest::Test
  NOBODY = 65_534
  USERS_GID = 100
  BACKENDS = [Loadout::Trust::Checks] + (Loadout::BACKEND == :native ? [Loadout::Native] : [])

  # The report of every backend for the call; fails unless they agree.
  def verdict(method, *args)
    reports = BACKENDS.map { |b| b.public_send(method, *args) }
    assert_equal [reports.first] * reports.size, reports, "native and Ruby twin disagree on #{method}#{args.inspect}"
    reports.first
  end

  def read(path, flags = 0)
    verdict(:trust_read, nil, path, flags)
  end

  def walk(dir, root, flags = 0)
    report = verdict(:trust_walk, dir, root, flags)
    report && report.first(2)
  end

  def file(dir, name, mode: 0o600, uid: 0, gid: 0, body: "data")
    path = File.join(dir, name)
    File.write(path, body)
    File.chmod(mode, path)
    File.chown(uid, gid, path)
    path
  end

  test "a regular file of this user or root, writable by no one else, is read; everything else is reported" do
    with_files do |dir|
      assert_equal "data", read(file(dir, "ok"))
      assert_equal "data".b, read(file(dir, "ok0644", mode: 0o644))
      assert_nil read(File.join(dir, "missing"))
      assert_equal [:other_writable, 0o100666], read(file(dir, "o", mode: 0o666)).values_at(0, 4)
      assert_equal :owner, read(file(dir, "nobody", uid: NOBODY)).first
      group = file(dir, "g", mode: 0o660, gid: USERS_GID)
      assert_equal :group_writable, read(group).first
      assert_equal "data", read(group, Loadout::Trust::SHARED), "the shared option trusts the group"
      assert_equal :group_writable, read(file(dir, "root-group", mode: 0o660, gid: 0)).first,
                   "root's group is never a private group (containers run any uid with gid 0)"
      assert_equal :other_writable, read(file(dir, "o2", mode: 0o662, gid: USERS_GID), Loadout::Trust::SHARED).first
    end
  end

  test "symlinks, FIFOs and devices are refused without blocking; a source read (any owner) follows symlinks" do
    with_files do |dir|
      target = file(dir, "target")
      File.symlink(target, link = File.join(dir, "link"))
      assert_equal [:symlink, link], read(link).first(2)
      File.symlink("/dev/urandom", urandom = File.join(dir, "urandom"))
      assert_equal :symlink, read(urandom).first
      File.mkfifo(fifo = File.join(dir, "fifo"))
      report = read(fifo)
      assert_equal [:not_regular, fifo], report.first(2)
      assert_equal "a FIFO", Loadout::Trust::Words.type_name(report[4])
      assert system("mknod", dev = File.join(dir, "dev"), "c", "1", "9")
      assert_equal :not_regular, read(dev).first
      assert_equal :not_regular, read(dir).first
      any = Loadout::Trust::ANY_OWNER
      assert_equal "data", read(link, any)
      assert_equal "data", read(file(dir, "theirs", uid: NOBODY, mode: 0o666), any)
      assert_equal :not_regular, read(fifo, any).first
      assert_equal :not_regular, read(urandom, any).first
      assert_nil Loadout::Trust.read_source(fifo)
    end
  end

  test "lstat, the quick look by path the self cache takes at the store and its hint" do
    with_files do |dir|
      assert_nil verdict(:trust_lstat, nil, file(dir, "ok"), 0)
      assert_nil verdict(:trust_lstat, nil, File.join(dir, "missing"), 0)
      assert_equal :other_writable, verdict(:trust_lstat, nil, file(dir, "o", mode: 0o666), 0).first
      assert_equal :owner, verdict(:trust_lstat, nil, file(dir, "n", uid: NOBODY), 0).first
      File.symlink(File.join(dir, "ok"), link = File.join(dir, "link"))
      assert_equal [:symlink, link], verdict(:trust_lstat, nil, link, 0).first(2)
      File.mkfifo(fifo = File.join(dir, "fifo"))
      assert_equal :not_regular, verdict(:trust_lstat, nil, fifo, 0).first
    end
  end

  test "walk: the cache dir and its parents up to the app root; above it only outside the root, to a sticky dir" do
    with_files do |tmp|
      app = File.join(tmp, "app")
      cache = File.join(app, "tmp/cache")
      FileUtils.mkdir_p(cache)
      File.chmod(0o755, tmp)
      assert_nil walk(cache, app)
      assert_equal [:missing, File.join(cache, "x")], walk(File.join(cache, "x"), app)
      File.chmod(0o777, File.join(app, "tmp"))
      assert_equal [:other_writable, File.join(app, "tmp")], walk(cache, app)
      File.chmod(0o1777, File.join(app, "tmp"))
      assert_equal [:other_writable, File.join(app, "tmp")], walk(cache, app), "sticky inside the range is refused"
      File.chmod(0o755, File.join(app, "tmp"))
      File.chmod(0o777, app)
      assert_equal [:other_writable, app], walk(cache, app), "the root itself is in the range"
      File.chmod(0o755, app)
      File.chmod(0o777, tmp)
      assert_nil walk(cache, app), "above the root: not the cache's business"
      assert_equal [:other_writable, tmp], walk(cache, nil), "with no root the walk goes on"
      File.chmod(0o1777, tmp)
      assert_nil walk(cache, nil), "a sticky world-writable dir ends it"
      File.chown(NOBODY, nil, tmp)
      assert_equal [:owner, tmp], walk(cache, nil), "unless another user owns it: its owner may rename what is in it"
      File.chown(0, nil, tmp)
      File.chmod(0o755, tmp)
      File.chown(NOBODY, nil, cache)
      assert_equal [:owner, cache], walk(cache, app)
      File.chown(0, USERS_GID, cache)
      File.chmod(0o770, cache)
      assert_equal [:group_writable, cache], walk(cache, app)
      assert_nil walk(cache, app, Loadout::Trust::SHARED)
      assert_equal [:not_directory, file(cache, "f")], walk(File.join(cache, "f"), app)
    end
  end

  test "walk: a symlink in the path must be this user's or root's, and its real path is walked too" do
    with_files do |tmp|
      app = File.join(tmp, "app")
      FileUtils.mkdir_p(app)
      shared = File.join(tmp, "shared/tmp")
      FileUtils.mkdir_p(shared)
      File.chmod(0o755, tmp)
      File.symlink(shared, link = File.join(app, "tmp")) # Capistrano's linked tmp/
      assert_nil walk(File.join(app, "tmp"), app)
      File.chmod(0o777, File.dirname(shared)) # the real path goes through a 0777 dir
      assert_equal [:other_writable, File.dirname(shared)], walk(link, app)
      File.chmod(0o755, File.dirname(shared))
      File.lchown(NOBODY, nil, link)
      assert_equal [:symlink, link], walk(link, app)
    end
  end
end

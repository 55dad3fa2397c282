# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# The "private group" exception: a group-writable cache file or directory is accepted when its
# group is the user's private group. Another user whose *primary* group it is (useradd -g, a
# process started with setpriv --regid, every container of an OpenShift pod with gid 0) can write
# it without being listed in /etc/group, so the group is private only when no other user can be
# in it by any means loadout can check: not gid 0, users and groups from files only, no other
# user with it as primary group, no member but the user; when in doubt, not private. Planted code
# never runs through such a group; each plant ends with the control (the same planted files,
# where the rule lets them through, do run the code), so it is the rule that stopped it.
class TrustPrivateGroupTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  DAEMON = [1, 1] # a system user with its own group (Debian: daemon:x:1:1, group daemon:x:1:)
  INTRUDER = 4242 # a user whose primary group is daemon's, as `useradd -g daemon` makes one
  ALICE = 1000

  def setup
    skip "needs root and unshare (a private mount namespace for the user database)" unless can_unshare_mounts?
  end

  def passwd_with(*lines)
    File.read("/etc/passwd") + lines.map { |l| "#{l}\n" }.join
  end

  # [native, twin] verdicts of trust_private_group? for each gid, as +uid+:+gid+, with these
  # user and group databases (in a private mount namespace: the machine's files stay as they are).
  def verdicts(dir, gids, passwd:, group:, nsswitch: nil, as: [ALICE, ALICE])
    script = <<~RUBY
      require "loadout"
      require "loadout/trust"
      gids = ARGV.map(&:to_i)
      native = Loadout::BACKEND == :native ? gids.map { |g| Loadout::Native.trust_private_group?(g) } : nil
      twin = gids.map { |g| Loadout::Trust::Checks.trust_private_group?(g) }
      print [Marshal.dump([native, twin])].pack("m0")
    RUBY
    prefix = user_db_prefix(dir, passwd: passwd, group: group, nsswitch: nsswitch)
    cmd = [*prefix, "setpriv", "--reuid=#{as[0]}", "--regid=#{as[1]}", "--clear-groups", RbConfig.ruby, "-I",
           Loadout::TestSupport::App.readable_lib, "-e", script, *gids.map(&:to_s)]
    out, err, status = Open3.capture3(clean_env, *cmd, chdir: "/")
    assert status.success?, err
    native, twin = Marshal.load(out.unpack1("m0")) # rubocop:disable Security/MarshalLoad
    assert_equal native, twin, "native and Ruby twin disagree" if native
    twin
  end

  test "a private group is one only the user can be in, by every check; when in doubt it is not" do
    with_files do |dir|
      File.chmod(0o755, dir)
      base = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/:/bin/sh\n"
      groups = "root:x:0:\nalice:x:1000:\nbob:x:1001:\nusers:x:100:\n"
      files = "passwd: files\ngroup: files\n"
      assert_equal [true, false, false, false], verdicts(dir, [1000, 1001, 100, 0], passwd: base, group: groups),
                   "alice's own group only"
      assert_equal [true], verdicts(dir, [1000], passwd: base, group: groups, nsswitch: files)
      assert_equal [false], verdicts(dir, [0], passwd: base, group: groups, as: [0, 0]), "gid 0 never"

      intruder = "#{base}mallory:x:1002:1000::/:/bin/sh\n"
      assert_equal [false], verdicts(dir, [1000], passwd: intruder, group: groups),
                   "another user's primary group (useradd -g alice mallory)"
      assert_equal [false], verdicts(dir, [1000], passwd: base, group: groups.sub("alice:x:1000:", "alice:x:1000:bob"))
      assert_equal [true], verdicts(dir, [1000], passwd: base, group: groups.sub("alice:x:1000:", "alice:x:1000:alice"))
      assert_equal [false], verdicts(dir, [1000], passwd: base, group: groups.sub("alice:x:1000:", "staff:x:1000:")),
                   "a group named otherwise"
      assert_equal [false], verdicts(dir, [1000], passwd: "#{base}+@netgroup::::::\n", group: groups), "NIS compat"
      alias_line = "#{base}alice2:x:1000:1001::/:/bin/sh\n"
      assert_equal [true], verdicts(dir, [1000], passwd: alias_line, group: groups), "the user's own second entry"

      # Users and groups a directory service may hold cannot all be listed.
      { "passwd: files ldap\ngroup: files\n" => false, "passwd: files\ngroup: sss files\n" => false,
        "passwd: compat\ngroup: compat\n" => false,
        "passwd: files [NOTFOUND=return] systemd # local\ngroup:\tfiles systemd\n" => true }.each do |conf, want|
        assert_equal [want], verdicts(dir, [1000], passwd: base, group: groups, nsswitch: conf), conf
      end
    end
  end

  test "root's group: a nobody process with gid 0 appends a planted record to a 0770/0660 cache" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      system("chmod", "-R", "g=u", cache, exception: true) # what an image's `chmod -R g=u` step makes
      open_path_to(app, cache, gid: 0)
      store = File.join(cache, "store")
      assert_equal "planted\n", as_user(NOBODY, 0, PLANT_RECORD, [store, File.join(app, "lib/a.rb"), evil_dir(app)])
      boot = trust_boot(app, cache)
      refute_includes boot.stdout, "PWNED"
      assert_refused(boot, app, cache, /writable by its group \(owner uid 0, group gid 0, mode 0770\)/)

      File.chmod(0o700, cache)
      File.chmod(0o600, *Dir[File.join(cache, "*")])
      assert_includes trust_boot(app, cache).stdout, "PWNED as 0", "control: the planted record is live once trusted"
    end
  end

  test "root's group: a self cache rewritten in place by a gid 0 process is never read inside setup" do
    skip "the self cache is native only" unless Loadout::BACKEND == :native
    with_trust_app do |app, cache|
      root = [0, 0] # (the readable copy of lib/: the planting user reads the file it targets)
      warm_up_as(app, cache, root)
      system("chmod", "-R", "g=u", cache, exception: true)
      open_path_to(app, cache, gid: 0)
      self_file = Dir[File.join(cache, "store.self-*")].first
      target = File.join(Loadout::TestSupport::App.readable_lib, "loadout/store/registry.rb")
      assert_equal "planted\n", as_user(NOBODY, 0, PLANT_SELF, [self_file, target, evil_dir(app)])
      assert_equal 0, File.stat(self_file).uid, "rewritten in place: still root's"
      boot = trust_boot(app, cache, user: root)
      refute_includes boot.stdout, "PWNED"
      assert_refused(boot, app, cache, /writable by its group/)

      File.chmod(0o700, cache)
      File.chmod(0o600, *Dir[File.join(cache, "*")])
      assert_includes trust_boot(app, cache, user: root).stdout, "PWNED as 0", "control: read once trusted"
    end
  end

  test "daemon's own group, given to another user as primary group: that user's planted record never runs" do
    with_trust_app do |app, cache|
      FileUtils.mkdir_p(cache)
      File.chmod(0o700, cache)
      File.chown(*DAEMON, cache)
      warm_up_as(app, cache, DAEMON)
      system("chmod", "-R", "g=u", cache, exception: true)
      db = { passwd: passwd_with("intruder:x:#{INTRUDER}:#{DAEMON[1]}::/:/usr/sbin/nologin"),
             group: File.read("/etc/group") }
      store = File.join(cache, "store")
      assert_equal "planted\n",
                   as_user(INTRUDER, DAEMON[1], PLANT_RECORD, [store, File.join(app, "lib/a.rb"), evil_dir(app)])
      boot = trust_boot(app, cache, user: DAEMON, user_db: db)
      refute_includes boot.stdout, "PWNED"
      assert_equal 0, boot.lfb, boot.stderr
      assert_match(/writable by its group \(owner uid 1, group gid 1, mode 0770\)/, boot.warnings.join)

      # Control: without that user, daemon's group is its private group, the cache is trusted,
      # and the record the other process planted runs.
      trusted = trust_boot(app, cache, user: DAEMON)
      assert_includes trusted.stdout, "PWNED as 1",
                      "control: the private group exception still holds:\n#{trusted.stderr}"
    end
  end

  test "a group-writable cache of group root (chmod 775 dir, 664 store) is not read silently by root" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      File.chmod(0o775, cache)
      File.chmod(0o664, File.join(cache, "store"))
      assert_equal 0, File.stat(cache).gid
      boot = trust_boot(app, cache)
      assert_refused(boot, app, cache, /writable by its group \(owner uid 0, group gid 0, mode 0775\)/)
    end
  end

  private

  # A cold boot and a warm boot that reads the cache, as +user+ ([uid, gid]).
  def warm_up_as(app, cache, user)
    trust_boot(app, cache, user: user)
    warm = trust_boot(app, cache, user: user)
    assert_operator warm.lfb, :>, 0, "a trusted warm cache is read:\n#{warm.stderr}"
    assert_equal [], warm.warnings
  end
end

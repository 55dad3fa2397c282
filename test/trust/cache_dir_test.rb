# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# The cache dir is a code-execution boundary: a boot reads nothing (not one load_from_binary,
# not even loadout's own self cache) from a cache dir that another user could have written, and
# writes nothing to it; it says so once. Each case first proves the same cache is read when it
# is trusted, so a refusal is the rule at work, not a cold cache.
class TrustCacheDirTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  def refuses(app, cache, path, pattern, env: {})
    before = cache_snapshot(cache)
    boot = trust_boot(app, cache, env: env)
    assert_refused(boot, app, path, pattern)
    assert_equal before, cache_snapshot(cache), "a refused cache is not written"
    boot
  end

  test "a world-writable cache dir (0777) is refused; chmod o-w makes it trusted again" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      File.chmod(0o777, cache)
      boot = refuses(app, cache, cache, /writable by others \(owner uid 0, group gid 0, mode 0777\)/)
      assert_match(/Fix: chmod o-w #{Regexp.escape(cache)}/, boot.warnings.first)
      File.chmod(0o755, cache)
      assert_operator trust_boot(app, cache).lfb, :>, 0
    end
  end

  test "a group-writable cache dir is refused unless the group is trusted (option or LOADOUT_TRUST_SHARED_CACHE)" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      File.chown(nil, USERS_GID, cache)
      File.chmod(0o770, cache)
      boot = refuses(app, cache, cache, /writable by its group \(owner uid 0, group gid #{USERS_GID}, mode 0770\)/)
      assert_includes boot.warnings.first, "LOADOUT_TRUST_SHARED_CACHE=1"
      shared = trust_boot(app, cache, env: { "T_SHARED" => "1" })
      assert_operator shared.lfb, :>, 0, shared.stderr
      assert_equal [], shared.warnings

      script = "require 'loadout/setup'\n#{PROGRAM.lines.grep_v(/Loadout.setup/).join}"
      via_env = run_with_deadline(clean_env("LOADOUT_CACHE_DIR" => cache, "LOADOUT_TRUST_SHARED_CACHE" => "1",
                                            "BUNDLE_GEMFILE" => File.join(app, "Gemfile"), "T_APP" => app),
                                  [RbConfig.ruby, "-I", LIB, "-e", script], app)
      assert_operator via_env.lfb, :>, 0, via_env.stderr
      assert_equal [], via_env.warnings
    end
  end

  test "a cache dir or store owned by another user is refused" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      File.chown(NOBODY, nil, cache)
      refuses(app, cache, cache, /owned by another user \(owner uid #{NOBODY}.*this process runs as uid 0/)
      File.chown(0, nil, cache)
      store = File.join(cache, "store")
      File.chown(NOBODY, nil, store)
      refuses(app, cache, store, /owned by another user/)
    end
  end

  test "a world-writable store (0666) or hint is refused" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      %w[store store.hint].each do |name|
        path = File.join(cache, name)
        File.chmod(0o666, path)
        refuses(app, cache, path, /writable by others .*mode 0666/)
        File.chmod(0o600, path)
      end
      assert_operator trust_boot(app, cache).lfb, :>, 0
    end
  end

  test "a world-writable directory between the cache dir and the app root is refused; one above the root is not" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      tmp = File.join(app, "tmp")
      File.chmod(0o777, tmp)
      refuses(app, cache, tmp, /#{Regexp.escape(tmp)} is writable by others/)
      File.chmod(0o1777, tmp) # sticky, but inside the range: still anyone may create tmp/cache first
      refuses(app, cache, tmp, /writable by others/)
      File.chmod(0o755, tmp)
      File.chmod(0o777, File.dirname(app)) # above the app root: outside the range
      assert_operator trust_boot(app, cache).lfb, :>, 0
    end
  end

  test "directories and files loadout creates are 0700 and 0600 (0750 and 0640 shared), whatever the umask" do
    with_trust_app do |app, cache|
      umask = File.umask(0o000)
      begin
        trust_boot(app, cache)
        shared_cache = File.join(app, "shared/cache")
        trust_boot(app, shared_cache, env: { "T_SHARED" => "1" })
      ensure
        File.umask(umask)
      end
      modes = ->(dir) { Dir.glob(File.join(dir, "*")).map { |f| File.stat(f).mode & 0o777 }.uniq }
      dir_modes = [cache, File.dirname(cache), File.join(app, "tmp")].map { |d| File.stat(d).mode & 0o777 }
      assert_equal [0o700], dir_modes.uniq
      assert_equal [0o600], modes.(cache), Dir.children(cache).inspect
      assert_equal [0o750], [shared_cache, File.dirname(shared_cache)].map { |d| File.stat(d).mode & 0o777 }.uniq
      assert_equal [0o640], modes.(shared_cache)
    end
  end

  test "a cache dir outside the app root: its walk ends at a sticky world-writable dir, a 0777 one is refused" do
    with_trust_app do |app, _cache|
      pub = File.join(File.dirname(app), "pub")
      Dir.mkdir(pub)
      File.chmod(0o1777, pub)
      cache = File.join(pub, "loadout-cache")
      warm_up(app, cache) # created by this user in the sticky dir: nobody else can swap it
      File.chmod(0o777, pub) # without the sticky bit anyone may rename it away
      refuses(app, cache, pub, /#{Regexp.escape(pub)} is writable by others/)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# Once checked, the cache dir is held open and every cache file is created, opened, renamed and
# removed in it (openat; the pure-Ruby twin through /proc/self/fd/N/): the path is never used
# again, at exit neither. A directory swapped for a symlink after setup gets nothing written
# through it. And a sticky world-writable directory is a trust boundary only when root or this
# user owns it: its owner may rename anything in it.
class TrustSwapTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  def swap_env(cache, user, target)
    { "T_SWAP" => cache, "T_SWAP_AS" => user.to_s, "T_SWAP_TO" => target }
  end

  # A directory of root's, 0700, holding a root-owned file named like the store.
  def root_only_dir(app)
    dir = File.join(File.dirname(app), "rootonly")
    Dir.mkdir(dir, 0o700)
    File.write(File.join(dir, "store"), "root's own file, not a store\n")
    File.chmod(0o600, File.join(dir, "store"))
    dir
  end

  test "a cache dir in a sticky 1777 dir another user owns is refused; that user's swap after setup gets no write" do
    with_trust_app do |app, _|
      pub = File.join(File.dirname(app), "pub")
      Dir.mkdir(pub)
      File.chown(NOBODY, NOBODY, pub)
      File.chmod(0o1777, pub)
      cache = File.join(pub, "cache")
      target = root_only_dir(app)
      before = cache_snapshot(target)
      boot = trust_boot(app, cache, env: swap_env(cache, NOBODY, target))
      assert boot.status.success?, boot.stderr
      assert_equal before, cache_snapshot(target), "root wrote into the directory the other user pointed the cache at"
      assert_refused(boot, app, pub, /#{Regexp.escape(pub)} is owned by another user \(owner uid #{NOBODY}/)
    end
  end

  test "a sticky 1777 dir of root's still ends the walk (like /tmp)" do
    with_trust_app do |app, _|
      pub = File.join(File.dirname(app), "pub")
      Dir.mkdir(pub)
      File.chmod(0o1777, pub)
      warm_up(app, File.join(pub, "cache"))
    end
  end

  test "a cache dir swapped for a symlink after setup: the boot writes in the dir it checked, not through the link" do
    with_trust_app do |app, cache|
      target = root_only_dir(app)
      before = cache_snapshot(target)
      boot = trust_boot(app, cache, env: swap_env(cache, 0, target)) # a cold boot: it writes its cache at exit
      assert boot.status.success?, boot.stderr
      assert_equal [], boot.warnings
      assert File.symlink?(cache)
      assert_equal before, cache_snapshot(target), "written through the symlink"

      checked = "#{cache}.away"
      names = Dir.children(checked)
      expected = %w[store store.hint store.last-boot]
      expected << "store.self-" if Loadout::BACKEND == :native
      expected.each { |name| assert names.any? { |n| n.start_with?(name) }, "#{name} missing from #{names.inspect}" }
      File.unlink(cache)
      File.rename(checked, cache)
      assert_operator warm_up(app, cache).lfb, :>, 0, "what the boot wrote there is its cache"
    end
  end
end

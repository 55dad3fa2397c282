# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# The store, its hint and the self cache are checked as opened (O_NOFOLLOW|O_NONBLOCK, then
# fstat of the descriptor): a symlink, a FIFO or a device in place of any of them is refused
# without blocking (a FIFO used to hang the boot forever, and store.hint -> /dev/urandom read
# without end), and so is a file that another user owns.
class TrustCacheFilesTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  # store.self-* is read only by the native backend (the Ruby twins have no self cache).
  def cache_files(cache)
    names = %w[store store.hint]
    names << File.basename(Dir.glob(File.join(cache, "store.self-*")).first.to_s) if Loadout::BACKEND == :native
    names.map { |n| File.join(cache, n) }
  end

  # Replaces +path+ with what the block makes there, boots, and puts the original back.
  def swapped(path)
    saved = "#{path}.saved"
    File.rename(path, saved)
    yield path
  ensure
    File.unlink(path) if File.symlink?(path) || File.exist?(path)
    File.rename(saved, path)
  end

  test "a FIFO in place of the store, the hint or the self cache is refused and never blocks the boot" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      files = cache_files(cache)
      assert_equal 3, files.size if Loadout::BACKEND == :native
      files.each do |path|
        swapped(path) do
          File.mkfifo(path)
          assert_refused(trust_boot(app, cache), app, path, /is a FIFO, not a regular file/)
        end
      end
      assert_operator trust_boot(app, cache).lfb, :>, 0
    end
  end

  test "/dev/urandom in place of each file, as a symlink or as a device node, is refused and never read" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      cache_files(cache).each do |path|
        swapped(path) do
          File.symlink("/dev/urandom", path)
          assert_refused(trust_boot(app, cache), app, path, /is a symlink/)
        end
        swapped(path) do
          assert system("mknod", path, "c", "1", "9"), "mknod (root) makes a urandom device node"
          assert_refused(trust_boot(app, cache), app, path, /is a character device, not a regular file/)
        end
      end
    end
  end

  test "a symlink swapped in for a file is refused, even to a trusted copy; a dangling one creates nothing" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      cache_files(cache).each do |path|
        copy = File.join(File.dirname(cache), "copy-#{File.basename(path)}")
        FileUtils.cp(path, copy)
        swapped(path) do
          File.symlink(copy, path)
          assert_refused(trust_boot(app, cache), app, path, /is a symlink/)
        end
      end
      store = File.join(cache, "store")
      target = File.join(File.dirname(cache), "not-there")
      swapped(store) do
        File.symlink(target, store)
        assert_refused(trust_boot(app, cache), app, store, /is a symlink/)
        refute File.exist?(target), "the store is never created through a symlink"
      end
    end
  end

  test "a hint or self cache owned by another user is refused with the whole cache" do
    with_trust_app do |app, cache|
      warm_up(app, cache)
      cache_files(cache).drop(1).each do |path|
        File.chown(NOBODY, nil, path)
        assert_refused(trust_boot(app, cache), app, path, /owned by another user/)
        File.chown(0, nil, path)
      end
      assert_operator trust_boot(app, cache).lfb, :>, 0
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "loadout/load_path"
require "loadout/store"
require "loadout/eviction"
require_relative "../load_path/backdate"

# Load-path listings made with the app and its bundle at one path serve them at another (a build
# stage, a CI cache restored into a fresh clone): a gem dir's listing is used as stored at its new
# place; an app dir is listed again (a fresh clone's mtimes vouch for nothing) and counts as
# revalidated when it holds the same files, a rescan when it does not.
class LoadPathRelocationTest < Minitest::Test
  include Loadout::TestSupport::Backdate
  FILES = [["home/gems/widget-1.0/lib/widget.rb", "W = 1"], ["home/gems/widget-1.0/lib/widget/part.rb", ""],
           ["app/lib/shop.rb", "S = 1"], ["app/lib/shop/cart.rb", ""]].freeze

  def setup
    skip "the load-path index is CRuby's" unless Loadout::LoadPath.supported?
  end

  def layout(base)
    { load_path: ["#{base}/home/gems/widget-1.0/lib", "#{base}/app/lib"], stable_roots: ["#{base}/home/gems"],
      root: "#{base}/app" }
  end

  def with_moved_copy
    with_files(FILES) do |dir|
      built = File.join(dir, "build")
      FileUtils.mkdir_p(built)
      %w[home app].each { |d| FileUtils.mv(File.join(dir, d), built) }
      store_path = File.join(dir, "cache/store")
      FileUtils.mkdir_p(File.dirname(store_path))
      Loadout::Store.open(store_path) do |store|
        assert_equal 2, Loadout::LoadPath.precompile(store: store, **layout(built))[:listed]
      end
      moved = File.join(dir, "worker-1")
      FileUtils.mkdir_p(moved)
      FileUtils.cp_r(File.join(built, "home"), moved) # new inodes and mtimes, as a restore or a clone
      FileUtils.cp_r(File.join(built, "app"), moved)
      # Other mtimes than the build's, and out of the racy second (see Backdate).
      backdate(moved, seconds: 1800)
      FileUtils.rm_rf(built)
      yield store_path, moved
    end
  end

  test "check says hit and precompile lists nothing: the gem's listing moved, the app dir revalidated" do
    with_moved_copy do |store_path, moved|
      Loadout::Store.open(store_path) do |store|
        answer = Loadout::LoadPath.check(store: store, **layout(moved).slice(:load_path, :stable_roots, :root))
        assert_equal :hit, answer[:status], answer.inspect
        assert_equal({ restored: true, listed: 0 }, Loadout::LoadPath.precompile(store: store, **layout(moved)))
      end
    end
  end

  test "a boot at the new place: no directory listed from scratch, the files found where they are now" do
    with_moved_copy do |store_path, moved|
      program = <<~RUBY
        require "loadout"
        require "loadout/load_path"
        require "loadout/store"
        require "loadout/scan"
        store = Loadout::Store.open(#{store_path.dump}, defer_writes: true)
        $LOAD_PATH.replace(#{layout(moved)[:load_path].inspect}) # (loadout loads its own files by absolute path)
        Loadout::LoadPath::Roots.prepend(Module.new { def stable_roots = [#{"#{moved}/home/gems".dump}].freeze })
        Loadout::LoadPath.install!(store: store, root: #{"#{moved}/app".dump})
        require "widget/part"
        require "shop/cart"
        stats = Loadout::LoadPath.stats
        puts [stats[:rescans], stats[:revalidated], stats[:restored_entries]].inspect
        puts $LOADED_FEATURES.grep(/widget|shop/).inspect
        store.close
      RUBY
      result = run_ruby!(program)
      rescans, revalidated, restored = eval(result.stdout.lines[0]) # rubocop:disable Security/Eval -- our child's inspect
      assert_equal [0, 1], [rescans, revalidated], result.stdout
      assert_operator restored, :>=, 1
      assert_equal ["#{moved}/home/gems/widget-1.0/lib/widget/part.rb", "#{moved}/app/lib/shop/cart.rb"],
                   eval(result.stdout.lines[1]) # rubocop:disable Security/Eval
      # The next boot at this place: its own listings, as stored.
      again = run_ruby!(program)
      assert_equal [0, 0], eval(again.stdout.lines[0]).first(2), again.stdout # rubocop:disable Security/Eval
    end
  end

  test "an app dir that differs from the listing made elsewhere is a miss for check, a rescan for a boot" do
    with_moved_copy do |store_path, moved|
      File.write(File.join(moved, "app/lib/added.rb"), "")
      Loadout::Store.open(store_path) do |store|
        answer = Loadout::LoadPath.check(store: store, **layout(moved).slice(:load_path, :stable_roots, :root))
        assert_equal :miss, answer[:status], answer.inspect
        assert_equal ["#{moved}/app/lib"], answer[:entries].map { |e| e[:path] }
        assert_equal 1, Loadout::LoadPath.precompile(store: store, **layout(moved))[:listed]
      end
    end
  end

  test "compaction drops the moved copies of listings whose dirs no gem home or app root here holds" do
    with_moved_copy do |store_path, moved|
      eviction = Loadout::Eviction.new(roots: ["#{moved}/app", "#{moved}/home"])
      Loadout::Store.open(store_path) do |store|
        keys = []
        store.each { |k, _| keys << k }
        moved_keys = keys.grep(%r{\Alp/(gem|app)/})
        assert_equal ["lp/app/lib", "lp/gem/gems/widget-1.0/lib"], moved_keys.sort
        read = ->(k) { store.get(k) }
        refute(moved_keys.any? { |k| eviction.call(k, read) }, "both dirs are here")
        FileUtils.rm_rf(File.join(moved, "home/gems/widget-1.0"))
        FileUtils.rm_rf(File.join(moved, "app/lib"))
        assert(moved_keys.all? { |k| eviction.call(k, read) }, "both dirs are gone")
      end
    end
  end
end

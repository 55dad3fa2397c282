# frozen_string_literal: true

require "test_helper"
require_relative "backdate"
require "support/fake_store"

# The index is stored on the first boot and restored on the next one (two child processes
# sharing a file-backed store), and whatever changed in between is noticed.
class LoadPathPersistenceTest < Minitest::Test
  include Loadout::TestSupport::Backdate
  TEST_DIR = File.expand_path("..", __dir__)

  # Boots a child: GEM_HOME is +home+ so "home/gems/*/lib" entries are stable; prints stats.
  def boot(home, store_path, body, opts: "", extra: [])
    script = <<~RUBY
      require "loadout"
      require "support/fake_store"
      require "loadout/scan"
      Loadout::LoadPath.__load_parts
      # The repo's lib/ (and test/) change while other work goes on: keep them out of the index.
      $LOAD_PATH.reject! { |p| p.start_with?(#{File.expand_path("../..", __dir__).dump} + "/") }
      gems = Dir.children("#{home}/gems").sort.map { |g| "#{home}/gems/\#{g}/lib" }
      $LOAD_PATH.unshift(*#{extra.inspect}, "#{home}/app/lib", *gems)
      store = Loadout::TestSupport::FakeStore.open(#{store_path.dump})
      Loadout::LoadPath.install!(store: store#{opts})
      #{body}
      p Loadout::LoadPath.stats
    RUBY
    env = { "GEM_HOME" => home, "GEM_PATH" => home, "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil }
    result = run_ruby!(script, env: env, ruby_opts: ["-I", TEST_DIR])
    out = result.stdout.lines
    [out[0...-1].join, eval(out.last)] # rubocop:disable Security/Eval
  end

  def tree
    files = (0...5).flat_map do |g|
      [["gems/g#{g}-1.0/lib/g#{g}.rb", "puts 'g#{g}'"], ["gems/g#{g}-1.0/lib/g#{g}/sub.rb", "puts 'g#{g} sub'"]]
    end
    files + [["app/lib/app.rb", "puts 'app'"], ["app/lib/app/models/", nil], ["app/lib/g1.rb", "puts 'app g1'"]]
  end

  test "a warm boot restores the index without scanning and resolves the same files" do
    with_files(tree) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      cold_out, cold = boot(home, store, 'require "g1"; require "g3/sub"; require "app"')
      warm_out, warm = boot(home, store, 'require "g1"; require "g3/sub"; require "app"')
      assert_equal "app g1\ng3 sub\napp\n", cold_out
      assert_equal cold_out, warm_out
      refute cold[:restored]
      assert warm[:restored], "second boot should restore: #{warm.inspect}"
      assert_operator cold[:rescans], :>=, 6
      assert_equal 0, warm[:rescans], "nothing changed, nothing rescanned: #{warm.inspect}"
      assert_equal 3, warm[:hits]
    end
  end

  test "a file added to a volatile dir between boots is found, only that dir is rescanned" do
    with_files(tree) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      boot(home, store, "nil")
      File.write("#{home}/app/lib/app/models/user.rb", "puts 'user'")
      out, warm = boot(home, store, 'require "app/models/user"')
      assert_equal "user\n", out
      assert_equal 1, warm[:rescans], warm.inspect
    end
  end

  test "a file added to a new shadowing path in a volatile dir wins over a gem" do
    with_files(tree) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      boot(home, store, 'require "g2"')
      File.write("#{home}/app/lib/g2.rb", "puts 'app g2'")
      out, = boot(home, store, 'require "g2"')
      assert_equal "app g2\n", out
    end
  end

  test "a directory listed in the same timestamp tick as a change is rechecked (racy mtimes)" do
    with_files(tree) do |home| # not backdated: every dir was modified just now
      store = "#{home}/store.bin"
      boot(home, store, "nil")
      File.write("#{home}/app/lib/app/models/racy.rb", "puts 'racy'")
      out, stats = boot(home, store, 'require "app/models/racy"')
      assert_equal "racy\n", out
      assert_operator stats[:rescans], :>=, 1
    end
  end

  test "an empty item is left out of the search, and a file added to it later is found" do
    with_files(tree + [["app/empty/"]]) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      extra = ["#{home}/app/empty"]
      boot(home, store, "nil", extra: extra)
      File.write("#{home}/app/empty/g0.rb", "puts 'shadowing g0'")
      out, stats = boot(home, store, 'require "g0"', extra: extra)
      assert_equal "shadowing g0\n", out
      assert_equal 1, stats[:rescans], stats.inspect
    end
  end

  test "a stored value that does not decode is a miss, not an error" do
    with_files(tree) do |home|
      backdate(home)
      store_path = "#{home}/store.bin"
      boot(home, store_path, "nil")
      store = Loadout::TestSupport::FakeStore.open(store_path)
      store.keys.each { |k| store.corrupt!(k, "\x04\x08garbage".b) }
      out, stats = boot(home, store_path, 'require "g4"')
      assert_equal "g4\n", out
      refute stats[:restored]
    end
  end

  test "a different $LOAD_PATH reuses the stored listings of the dirs it shares" do
    with_files(tree) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      boot(home, store, "nil")
      FileUtils.mkdir_p("#{home}/extra")
      File.write("#{home}/extra/e.rb", "puts 'e'")
      out, stats = boot(home, store, "$LOAD_PATH.push(#{"#{home}/extra".dump}); require 'e'; require 'g0'")
      assert_equal "e\ng0\n", out
      # The listing of the pushed entry is new; everything else came from the store.
      assert_equal 1, stats[:rescans], stats.inspect
    end
  end

  test "trust: :all restores volatile dirs without checking them" do
    with_files(tree) do |home|
      backdate(home)
      store = "#{home}/store.bin"
      boot(home, store, "nil", opts: ", trust: :all")
      File.write("#{home}/app/lib/later.rb", "puts 'later'")
      _, stats = boot(home, store, "nil", opts: ", trust: :all")
      assert_equal 0, stats[:rescans]
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require_relative "../load_path/app_boot"

# `loadout precompile` builds the load-path index for the app's $LOAD_PATH (what its boot sees
# at `require "loadout/setup"`), not for the CLI's, so the first boot after it restores the
# index, and it stores the listings of the dirs the app adds after boot.
class PrecompileIndexTest < Minitest::Test
  include Loadout::TestSupport::AppBoot

  def precompile!(app, lib)
    loadout!(app, lib, "precompile", "--no-iseq", "--no-yaml", "--no-json").stdout
  end

  # Entries the boot listed itself (LOADOUT_LOG=1 prints "load_path rescan <dir>").
  def rescanned(stderr)
    stderr.scan(/^loadout: load_path rescan (\S+)/).flatten.sort
  end

  test "after precompile the first boot restores the index and loads what plain Ruby loads" do
    with_booted_app do |app, lib|
      plain = boot!(app, lib, env: { "FIXTURE_WITHOUT_LOADOUT" => "1" }).stdout.sub("loadout=off\n", "")
      out = precompile!(app, lib)
      assert_match(/load-path index for the app's \$LOAD_PATH \(\d+ items: 1 built, 0 already stored;/, out)
      first = boot!(app, lib, env: { "LOADOUT_STATS" => "1", "LOADOUT_LOG" => "1" })
      assert_equal plain, first.stdout.sub("loadout=on\n", "")
      stats = load_path_stats(first.stderr)
      assert_operator stats["restored_entries"].to_i, :>=, 7, first.stderr
      # lib/ (unshifted by config/application.rb after boot) was listed by precompile; the two
      # vendored gem dirs are no convention precompile knows, so the boot lists them.
      assert_equal ["#{app}/vendor/gems/alpha/lib", "#{app}/vendor/gems/beta/lib"], rescanned(first.stderr)
    end
  end

  test "without precompile the first boot builds the index (the test above can fail)" do
    with_booted_app do |app, lib|
      first = boot!(app, lib, env: { "LOADOUT_STATS" => "1" })
      assert_equal "0", load_path_stats(first.stderr)["restored_entries"]
    end
  end

  test "precompile uses the $LOAD_PATH the last boot recorded: -I items and dirs added after boot" do
    with_booted_app do |app, lib|
      extra = File.join(app, "config") # an item only the command line adds
      boot!(app, lib, ruby_opts: ["-I", extra])
      Loadout::Store.open(store_path(app)) do |s|
        keys = []
        s.each { |k, _| keys << k if k.start_with?("lp/idx/", "lp/ent/") }
        keys.each { |k| s.delete(k) }
      end
      out = precompile!(app, lib)
      assert_match(/\(\d+ \+ \d+ items: 2 built/, out, "the recorded $LOAD_PATH and the bundle's")
      first = boot!(app, lib, env: { "LOADOUT_STATS" => "1", "LOADOUT_LOG" => "1" }, ruby_opts: ["-I", extra])
      assert_equal "true", load_path_stats(first.stderr)["restored"], first.stderr
      assert_empty rescanned(first.stderr), "every dir the recorded boot added later was listed by precompile"
      assert_includes check(app, lib, status: 0), "load_path:  hit"
    end
  end

  test "a second precompile finds everything stored and writes no index again" do
    with_booted_app do |app, lib|
      precompile!(app, lib)
      assert_match(/items: 0 built, 1 already stored; 0 dirs listed/, precompile!(app, lib))
    end
  end
end

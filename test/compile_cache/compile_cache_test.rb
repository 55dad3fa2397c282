# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"
require "support/compile_cache_store"

class CompileCacheTest < Minitest::Test
  CC = Loadout::CompileCache

  def store
    @store ||= Loadout::TestSupport::CompileCacheStore.open(nil)
  end

  def teardown
    CC.uninstall!
  end

  test "supported? knows every kind and rejects others" do
    assert_equal RUBY_ENGINE == "ruby", CC.supported?(:iseq) ? true : false
    assert CC.supported?(:yaml)
    assert CC.supported?(:json)
    assert_raises(Loadout::ConfigError) { CC.supported?(:toml) }
  end

  test "bad options raise ConfigError naming the option" do
    { trust: :sometimes, roots: ["relative/dir"], racy_ns: -1, yaml: "yes" }.each do |name, value|
      error = assert_raises(Loadout::ConfigError) { CC.install!(store: store, name => value) }
      assert_equal name, error.name
    end
    assert_raises(Loadout::ConfigError) { CC.install!(store: Object.new) }
    refute CC.installed?
  end

  test "install! and uninstall! switch the handlers; stats has every counter per kind" do
    CC.install!(store: store, iseq: false, roots: ["/app"])
    assert CC.installed?
    stats = CC.stats
    assert_equal %i[iseq yaml json], stats.keys
    %i[hits misses stale revalidated corrupt skipped compiles bytes_read load_ns compile_ns digest_ns].each do |f|
      assert_equal 0, stats[:yaml].fetch(f)
    end
    CC.uninstall!
    refute CC.installed?
  end

  test "a store that is not writable makes the cache read-only" do
    readonly = Loadout::TestSupport::CompileCacheStore.open(nil, readonly: true)
    CC.install!(store: readonly, iseq: false, roots: [])
    assert CC.entries.readonly?
  end
end

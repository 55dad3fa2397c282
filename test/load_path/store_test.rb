# frozen_string_literal: true

require "test_helper"
require_relative "backdate"

# The index persisted through the real Loadout::Store, across two child boots.
class LoadPathStoreTest < Minitest::Test
  include Loadout::TestSupport::Backdate
  def boot(dir, store_path)
    script = <<~RUBY
      require "loadout"
      require "loadout/scan"
      Loadout::LoadPath.__load_parts
      Loadout::Store
      # The repo's lib/ (and test/) change while other work goes on: keep them out of the index.
      $LOAD_PATH.reject! { |p| p.start_with?(#{File.expand_path("../..", __dir__).dump} + "/") }
      $LOAD_PATH.unshift(#{"#{dir}/lib".dump})
      store = Loadout::Store.open(#{store_path.dump}, fail_safe: true)
      Loadout::LoadPath.install!(store: store)
      require "thing"
      s = Loadout::LoadPath.stats
      p [s[:restored], s[:rescans] > 0, s[:hits]]
    RUBY
    run_ruby!(script).stdout.lines
  end

  test "a second boot restores the index from the Store" do
    with_files([["lib/thing.rb", "puts 'thing'"]]) do |dir|
      backdate(dir)
      store = "#{dir}/cache/loadout.store"
      FileUtils.mkdir_p(File.dirname(store))
      assert_equal ["thing\n", "[false, true, 1]\n"], boot(dir, store)
      assert_equal ["thing\n", "[true, false, 1]\n"], boot(dir, store)
    end
  end

  test "a damaged store file degrades to a rebuild, never a crash or a wrong file" do
    with_files([["lib/thing.rb", "puts 'thing'"]]) do |dir|
      backdate(dir)
      store = "#{dir}/cache/loadout.store"
      FileUtils.mkdir_p(File.dirname(store))
      boot(dir, store)
      data = File.binread(store)
      File.binwrite(store, data.bytes.map.with_index { |b, i| i > 64 && i.odd? ? b ^ 0x5a : b }.pack("C*"))
      lines = boot(dir, store)
      assert_equal "thing\n", lines[0]
      assert_match(/\A\[false, true, 1\]\n\z/, lines[1])
    end
  end
end

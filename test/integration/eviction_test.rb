# frozen_string_literal: true

require "test_helper"
require "support/gem_upgrades"

# The store stays bounded through `bundle update`s (issue 15, part 2): 30 upgrades of a
# 200-file gem, a boot after each; every boot loads exactly the new version, and the store never
# grows past twice a fresh store for the last state. (bench/eviction.rb prints the sizes.)
class EvictionIntegrationTest < Minitest::Test
  UPGRADES = 30

  test "#{UPGRADES} gem upgrades: every boot correct, the store within 2x a fresh store for the last state" do
    with_files do |dir|
      sim = Loadout::TestSupport::GemUpgrades.new(File.join(dir, "history"))
      sizes = (1..UPGRADES + 1).map do |version|
        sim.install(version, remove: version > 1 ? version - 1 : nil)
        out, err, status = sim.boot(version)
        assert status.success?, err
        assert_equal sim.expected(version), out, "boot after upgrade #{version - 1}"
        assert_empty err
        sim.store_size
      end

      fresh = Loadout::TestSupport::GemUpgrades.new(File.join(dir, "fresh"))
      fresh.install(UPGRADES + 1)
      out, = fresh.boot(UPGRADES + 1)
      assert_equal fresh.expected(UPGRADES + 1), out
      limit = 2 * fresh.store_size
      sizes.each_with_index do |size, i|
        assert_operator size, :<=, limit,
                        "store after upgrade #{i}: #{size} bytes (fresh: #{fresh.store_size}); all: #{sizes}"
      end
    end
  end
end

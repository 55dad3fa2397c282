# frozen_string_literal: true

# The store's size through gem upgrades (issue 15, part 2): an app whose $LOAD_PATH holds one
# versioned gem of 200 files; each upgrade installs the next version and removes the old one,
# then the app boots once. Prints the store size after each
# upgrade and the size of a fresh store for the last state (a cold boot, then a warm one).
#
#   ruby bench/eviction.rb                  # 30 upgrades
#   UPGRADES=10 LOADOUT_PURE=1 ruby bench/eviction.rb
#
# Last line: machine-readable JSON.

require "json"
require "tmpdir"
require_relative "../test/support/gem_upgrades"

$stdout.sync = true
UPGRADES = Integer(ENV.fetch("UPGRADES", "30"))

def kib(bytes)
  format("%.1f KiB", bytes / 1024.0)
end

Dir.mktmpdir("loadout-eviction") do |dir|
  sim = Loadout::TestSupport::GemUpgrades.new(File.join(dir, "history"))
  sizes = []
  wrong = 0
  (1..UPGRADES + 1).each do |version|
    sim.install(version, remove: version > 1 ? version - 1 : nil)
    out, err, status = sim.boot(version)
    ok = status.success? && out == sim.expected(version) && err.empty?
    wrong += 1 unless ok
    sizes << sim.store_size
    puts format("%-10s %12s%s", version == 1 ? "install" : "upgrade #{version - 1}", kib(sizes.last),
                ok ? "" : "  WRONG BOOT: #{out.inspect} #{err.inspect}")
  end

  fresh = Loadout::TestSupport::GemUpgrades.new(File.join(dir, "fresh"))
  fresh.install(UPGRADES + 1)
  fresh.boot(UPGRADES + 1)
  fresh_cold = fresh.store_size
  fresh.boot(UPGRADES + 1)
  fresh_warm = fresh.store_size
  worst = sizes.max
  puts "fresh store for the last state: #{kib(fresh_cold)} after a cold boot, #{kib(fresh_warm)} after a warm one"
  puts format("largest store during the upgrades: %s (%.2fx the fresh one)", kib(worst), worst.to_f / fresh_warm)
  puts JSON.generate(upgrades: UPGRADES, sizes: sizes, fresh_cold: fresh_cold, fresh_warm: fresh_warm,
                     ratio: (worst.to_f / fresh_warm).round(3), wrong_boots: wrong)
end

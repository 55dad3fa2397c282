# frozen_string_literal: true

# Long crash and concurrency runs for the store and journal (the suite runs the short versions).
#   rake stress                      # 2,000 kill -9 trials per mode, native backend
#   LOADOUT_STRESS_TRIALS=5000 rake stress
#   LOADOUT_PURE=1 rake stress       # the Ruby twins
desc "kill -9 / compaction / concurrency stress for Loadout::Store and Journal (LOADOUT_STRESS_TRIALS, default 2000)"
task stress: :compile do
  trials = ENV.fetch("LOADOUT_STRESS_TRIALS", "2000")
  env = { "LOADOUT_STRESS_TRIALS" => trials }
  files = %w[test/store/crash_test.rb test/store/hint_test.rb test/store/concurrency_test.rb
             test/journal/journal_test.rb]
  files.each do |file|
    sh env, RbConfig.ruby, "-Ilib", "-Itest", file, "-v"
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# Runs the generated project (test/support/rake_project.rb) under stock Rake and under
# loadout/rake, each in its own copy of the tree, and compares what rake printed, its exit
# status, and what it changed on disk. Every scenario with a breaker also proves it can fail: a
# deliberately broken memo (test/support/rake_broken_memo.rb) must make the comparison differ.
# Runs against every rake found (the bundle's, and Debian's 13.0.6 with the pre-13.1 FileTask).
class RakeDifferentialTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject
  LATER = P::BASE_TIME + 1000

  Scenario = Struct.new(:name, :args, :breaker, :mutate, :sorted, :env, :loadout_env, keyword_init: true)

  # env: for both runs; loadout_env: for the loadout run only.
  def self.scenario(name, args: [], breaker:, sorted: false, env: {}, loadout_env: {}, &mutate)
    Scenario.new(name: name, args: args, breaker: breaker, mutate: mutate || proc {}, sorted: sorted, env: env,
                 loadout_env: loadout_env)
  end

  SCENARIOS = [
    scenario("no-op", breaker: "basename_key"),
    # Touch times fall between the object (10..13) and bin/app (15): only the rebuilt objects'
    # new mtimes can rebuild bin/app, so a memo that keeps their old mtimes shows.
    scenario("one source touched", breaker: "never_invalidate") { |d| P.touch(d, "src/b.c", P::BASE_TIME + 11.5) },
    scenario("one header touched", breaker: "never_invalidate") do |d|
      P.touch(d, "include/util.h", P::BASE_TIME + 12.5)
    end,
    scenario("an object deleted", breaker: "enoent_as_fresh") { |d| File.delete(File.join(d, "obj/util.o")) },
    scenario("a prerequisite missing", breaker: "enoent_as_fresh") { |d| File.delete(File.join(d, "src/d.c")) },
    scenario("a file task creates files other tasks read", breaker: "own_path_only") do |d|
      P.touch(d, "config.in", LATER)
    end,
    scenario("a plain task writes a file a file task reads", breaker: "never_invalidate") do |d|
      P.write(d, "tables.in", "tables v2\n", P::BASE_TIME)
    end,
    # Arguments reach each task scoped to its own names, through loadout's Task#invoke.
    scenario("task arguments scoped per task", args: ["args_top[1,2,3,4]"], breaker: nil),
    # rules/r.ro exists; its rule must still be found before a plain FileTask is synthesized.
    scenario("a rule's source touched", env: { "WITH_RULE" => "1" }, breaker: "never_invalidate") do |d|
      P.touch(d, "rules/r.rc", P::BASE_TIME + 7)
    end,
    # obj/p1.o (22) is rebuilt in parallel with p2, p3; bin/par (25) only sees p1's new mtime.
    scenario("multitask with shared prerequisites", args: ["all"], sorted: true, breaker: "never_invalidate") do |d|
      P.touch(d, "include/common.h", P::BASE_TIME + 22.5)
    end,
    scenario("every prerequisite list as a multitask (-m)", args: ["-m", "all"], sorted: true,
                                                            breaker: "never_invalidate") do |d|
      P.touch(d, "include/common.h", P::BASE_TIME + 22.5)
    end,
    scenario("multitask on 4 threads (-m -j 4)", args: ["-m", "-j", "4", "all"], sorted: true,
                                                 breaker: "never_invalidate") do |d|
      P.touch(d, "include/common.h", P::BASE_TIME + 22.5)
    end,
    scenario("dry run", args: ["-n"], breaker: "basename_key") { |d| P.touch(d, "config.in", LATER) },
    scenario("--trace", args: ["--trace"], breaker: "never_invalidate") do |d|
      P.touch(d, "src/b.c", P::BASE_TIME + 11.5)
    end,
    scenario("a source 1ns newer than its object", breaker: "second_resolution") do |d|
      P.touch(d, "src/a.c", P::BASE_TIME + 10 + Rational(1, 1_000_000_000))
    end,
    scenario("a FileTask on a directory", breaker: "second_resolution") do |d|
      File.write(File.join(d, "assets/new.txt"), "new\n")
      P.touch(d, "assets", P::BASE_TIME + 20 + Rational(1, 1_000_000_000))
    end,
    scenario("loaded from the Rakefile", loadout_env: { "LOADOUT_RAKE_IN_RAKEFILE" => "1" },
                                         breaker: "never_invalidate") do |d|
      P.touch(d, "src/c.c", P::BASE_TIME + 12.5)
    end,
    # An action rewrites gen/nested.in, then reenables and invokes out/nested.txt (checked earlier
    # in the run): stock rebuilds it at once, so the memo must not be used while the action runs.
    scenario("an action changes a file, then invokes a task that depends on it",
             env: { "NESTED_INVOKE" => "1" }, breaker: "trusted_in_actions"),
    # A rule adds "ns:shadow.txt" mid-run, no action running: out/shadow_late.txt must see it.
    scenario("a task added mid-run shadows a name resolved earlier", args: ["shadowing"],
                                                                     breaker: "shadowed_kept") do |d|
      P.touch(d, "ns:shadow.txt", P::BASE_TIME + 30)
    end,
    # Here out_of_date? re-resolves the prerequisite's own name ("shadow.txt", dropped as above)
    # and so decides alike; which task is invoked shows in the --trace lines.
    scenario("a task added mid-run shadows a parent-scope (^) name resolved earlier",
             args: ["--trace", "caret_shadowing"], breaker: "caret_kept") do |d|
      P.touch(d, "ns:shadow.txt", P::BASE_TIME + 30)
    end,
    # Not decisions, so no memo bug can change them; compared all the same.
    scenario("a failing action", env: { "FAIL_TASK" => "obj/c.o" }, breaker: nil) do |d|
      P.touch(d, "include/util.h", P::BASE_TIME + 12.5)
    end,
    # --trace prints the full backtrace, where loadout's frames show between rake's (the only
    # known difference; without --trace they are hidden like rake's own). Compared without them.
    scenario("a failing action under --trace", args: ["--trace"], env: { "FAIL_TASK" => "obj/c.o" },
                                               breaker: nil) do |d|
      P.touch(d, "include/util.h", P::BASE_TIME + 12.5)
    end,
    scenario("build all (-B)", args: ["-B"], breaker: nil),
    scenario("-P", args: ["-P"], breaker: nil),
    scenario("-T", args: ["-T"], breaker: nil),
    scenario("-T -A", args: ["-T", "-A"], breaker: nil),
  ].freeze

  P.rake_libs.each do |rake_lib|
    version = P.rake_version(rake_lib)
    SCENARIOS.each do |sc|
      test "#{sc.name} behaves as stock (rake #{version})" do
        stock = outcome(sc, rake_lib, :stock)
        loadout = outcome(sc, rake_lib, :loadout)
        assert_equal stock, loadout
        if sc.breaker && sc.name != "no-op" && sc.args != ["-n"] && stock[:status] == 0
          refute_empty stock[:changes], "the scenario changed nothing"
        end
      end

      next unless sc.breaker

      test "#{sc.name} detects a broken memo: #{sc.breaker} (rake #{version})" do
        stock = outcome(sc, rake_lib, :stock)
        broken = outcome(sc, rake_lib, :loadout, break_memo: sc.breaker)
        refute_equal stock, broken, "a #{sc.breaker} memo went unnoticed"
      end
    end
  end

  private

  def outcome(sc, rake_lib, mode, break_memo: nil)
    with_files do |dir|
      P.write_project(dir)
      sc.mutate.call(dir)
      before = P.snapshot(dir)
      env = mode == :loadout ? sc.env.merge(sc.loadout_env) : sc.env
      out, err, status = P.run_rake(dir, sc.args, mode: mode, rake_lib: rake_lib, break_memo: break_memo, env: env)
      out, err = [out, err].map { |s| s.gsub(dir, "<dir>") }
      err = err.lines.reject { |l| l.start_with?("#{P::LIB}/loadout/rake") }.join if sc.args.include?("--trace")
      out, err = [out.lines.sort.join, err.lines.sort.join] if sc.sorted
      { stdout: out, stderr: err, status: status, changes: P.changes(before, P.snapshot(dir)) }
    end
  end
end

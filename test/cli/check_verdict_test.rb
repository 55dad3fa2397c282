# frozen_string_literal: true

require "test_helper"
require "support/generated_app"

# `loadout check` answers for the boot that follows: after either form of precompile, in the app
# where it ran and in a copy of it at another path, its verdict and exit status are what the next
# boot then does (every lookup a hit or a revalidation, nothing compiled; or, when check names a
# file that will miss, that the boot misses exactly it).
class CheckVerdictTest < Minitest::Test
  include Loadout::TestSupport::GeneratedApp

  KINDS = %w[iseq yaml json].freeze

  # { "iseq" => { "hits" => 3, ... }, ... } of the boot's LOADOUT_STATS report.
  def boot_counts(app)
    run = boot_generated!(app, env: { "LOADOUT_STATS" => "1", "LOADOUT_LOG" => "1" })
    counts = KINDS.to_h do |kind|
      line = run.stderr[/^  #{kind}: +(hits=.*)$/, 1] or flunk(run.stderr)
      [kind, line.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }]
    end
    missed = run.stderr.scan(/^loadout: (?:iseq|yaml|json) (?:miss|stale) (\S+)/).flatten
    [counts, missed]
  end

  # The verdict a HIT promises: nothing for Ruby or Psych to do.
  def assert_all_served(counts, label)
    KINDS.each do |kind|
      c = counts[kind]
      assert_equal [0, 0, 0, 0], c.values_at("misses", "stale", "corrupt", "compiles"), "#{label}: #{kind} #{c}"
    end
    assert_operator counts["iseq"]["hits"] + counts["iseq"]["revalidated"], :>, 40, label
  end

  test "after the walk form (precompile --gemfile): check --gemfile says HIT and the next boot misses nothing" do
    with_generated_app do |app|
      loadout(app, "precompile", "--gemfile", status: 0)
      assert_includes loadout(app, "check", "--gemfile", status: 0).stdout, "verdict:    HIT"
      counts, missed = boot_counts(app)
      assert_empty missed
      assert_all_served(counts, "the boot after the walk form")
    end
  end

  test "after the boot form: check says HIT for the files the boot loaded; an edited one is a MISS the boot then has" do
    with_generated_app do |app|
      run = loadout(app, "precompile", "--", RbConfig.ruby, "app.rb", status: 0)
      assert_match(/^loadout precompile: boot `.*app\.rb` \(\d+\.\d s\): iseq \d+ /, run.stdout)
      check = loadout(app, "check", status: 0)
      assert_match(/^files:      those a boot loads through the cache, as recorded .*\(`app\.rb`\)$/, check.stdout)
      counts, missed = boot_counts(app)
      assert_empty missed
      assert_all_served(counts, "the boot after the boot form")

      edited = File.join(app, "lib/shop/pricing.rb")
      File.write(edited, "#{File.read(edited)}# edited\n")
      check = loadout(app, "check", status: 2)
      assert_includes check.stdout, "  stale: #{edited} (content changed since it was cached)"
      assert_match(/^iseq: +\d+ files: 1 stale, \d+ hit$/, check.stdout)
      _, missed = boot_counts(app)
      assert_equal [edited], missed
    end
  end

  test "a cache dir that does not exist yet: check says whether the next boot can make it, as that boot does" do
    with_generated_app do |app|
      FileUtils.rm_rf(File.join(app, "tmp/cache")) # the cache dir and its parent: a boot makes both
      check = loadout(app, "check", status: 2)
      assert_includes check.stdout, "cache dir:  #{cache_dir(app)}\n"
      boot_generated!(app)
      assert File.file?(File.join(cache_dir(app), "store")), "the boot made the cache dir and wrote its store"

      # A user who cannot write the nearest directory that exists: the boot cannot make it either.
      FileUtils.rm_rf(File.join(app, "tmp/cache"))
      FileUtils.chmod_R("a+rX", File.dirname(app))
      # (Bundler 4.0 writes this app's lockfile when it sets up: that user may write that file.)
      FileUtils.chmod("a+w", File.join(app, "Gemfile.lock"))
      env = { "HOME" => File.dirname(app) }
      check = loadout(app, "check", status: 2, env: env, unprivileged: true)
      assert_includes check.stdout, "cache dir:  #{cache_dir(app)} (not writable: boots will not update it)\n"
      boot = app_ruby(app, "app.rb", env: env, unprivileged: true)
      assert boot.success?, boot.stderr
      refute File.exist?(File.join(app, "tmp/cache")), "that boot made nothing"

      check = loadout(app, "check", status: 2, env: { "LOADOUT_READONLY" => "1" })
      assert_includes check.stdout, "cache dir:  #{cache_dir(app)} (read-only: boots will not update it)\n"
    end
  end

  test "a file at the store's path that is not a store: check says MISS with the fix, as the next boot then does" do
    with_generated_app do |app|
      loadout(app, "precompile", "--", RbConfig.ruby, "app.rb", status: 0)
      store = File.join(cache_dir(app), "store")
      notes = "somebody's notes, not a store\n" * 40
      File.write(store, notes)
      check = loadout(app, "check", status: 2)
      assert_includes check.stdout, "store:      #{store}: is not a loadout store (no valid record in it); " \
                                    "boots neither read nor write it"
      assert_includes check.stdout, "`loadout clean --all`"
      assert_includes check.stdout, "verdict:    MISS"
      stats = loadout(app, "stats", status: 0)
      assert_match(/^problem:    is not a loadout store .*: boots neither read nor write it/, stats.stdout)

      counts, = boot_counts(app)
      assert_equal 0, counts["iseq"]["hits"], "the boot read nothing"
      assert_operator counts["iseq"]["misses"], :>, 40
      assert_equal notes, File.read(store), "nor wrote anything"
      loadout(app, "clean", "--all", status: 0)
      boot_generated!(app)
      assert_includes loadout(app, "check", status: 0).stdout, "verdict:    HIT"
    end
  end

  test "the cache moved with the app to another path: check says HIT there, the first boot compiles nothing" do
    with_generated_app do |app|
      loadout(app, "precompile", "--gemfile", "--", RbConfig.ruby, "app.rb", status: 0)
      moved = File.join(File.dirname(app), "elsewhere/app")
      FileUtils.mkdir_p(File.dirname(moved))
      FileUtils.cp_r(app, moved) # new path, new inodes and times: a fresh checkout with the cache restored
      # A checkout's dirs are older than the racy second a listing distrusts (see Backdate): a boot
      # right after the copy would list them again, whatever the cache held.
      backdate(moved, seconds: 1800)
      check = loadout(moved, "check", status: 0)
      assert_includes check.stdout, "(recorded with the app at #{app}: its files are checked here, under #{moved})"
      checked = check.stdout.lines.grep(/^(iseq|yaml|json|  loaded before setup|  (stale|missing):)/).join
      assert_includes checked, "#{moved}/app.rb"
      refute_includes checked, "#{app}/", "nothing checked at the old path"
      recorded_by = check.stdout[/^files: .* recorded .* by pid (\d+)/, 1] or flunk(check.stdout)
      FileUtils.rm_rf(app) # nothing of the old place is used
      counts, missed = boot_counts(moved)
      assert_empty missed
      assert_all_served(counts, "the first boot at the new path")
      assert_operator counts["iseq"]["revalidated"], :>, 0
      # It appended stat records, but the record of loaded files names its files already (at the
      # build's paths): a fleet's workers do not each rewrite it.
      after = loadout(moved, "check", status: 0).stdout
      assert_equal recorded_by, after[/^files: .* recorded .* by pid (\d+)/, 1], after
      assert_match(/^last boot:  .*; wrote to the cache/, loadout(moved, "stats", status: 0).stdout)
    end
  end
end

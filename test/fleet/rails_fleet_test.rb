# frozen_string_literal: true

require "test_helper"
require "yaml"
require "shellwords"
require_relative "../rails/support/rails_app"

# The README's "CI fleets and Docker images" recipes, run on the Rails test app in the form they
# give, without Docker or GitHub (neither is here):
#
# - the Dockerfile: its `loadout` RUN steps as root with the app at /rails and the bundle at
#   /usr/local/bundle (bind mounts in a private mount namespace: the paths the recipe implies),
#   its ENV; the final stage's COPY as a copy keeping times and owners (new inodes and ctimes),
#   its `chown` with the rails user mapped to uid 65534, and the containers' boots as that uid,
#   four at once from the one cache. Then the README's target: the cache the build made at
#   /rails, copied into the app at its own path (another path, another bundle path).
# - the GitHub Actions workflow: the app in a git repository; the boot-cache job's `run:` steps
#   in a `git clone`, the cache saved with tar (what actions/cache stores); eight test workers,
#   each a fresh `git clone` at its own path with the cache restored from the tar, running their
#   `run:` steps with the jobs' env (`${{ github.workspace }}` the clone), then booting at once
#   (the app's own `bin/rails test` is replaced by a boot of the app whose counters are
#   asserted, the prelude's among them). The bundle, which `bundler-cache: true` restores into
#   each workspace's vendor/bundle, is hard links of the suite's Rails bundle there.
#
# Each asserts that `loadout check` said HIT (exit 0) before the boot, and that the boot then
# compiled nothing: no miss, stale, corrupt or skipped lookup in the ISeq, YAML and JSON caches,
# no directory listed from scratch by the load-path index, and the same load-path answers as a
# warm boot (its "misses" are requires of features that exist nowhere, the app's own optional
# requires rescued with LoadError, answered from the index on every boot).
class RailsFleetTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  README = File.expand_path("../../README.md", __dir__)
  BUNDLE = RailsAppGenerator::BUNDLE_PATH
  SECRET = RailsAppGenerator::SECRET_KEY_BASE
  APP_USER = 65_534 # the recipe's "rails" user (uid 1000 there): any unprivileged uid will do
  # What the app's .dockerignore / .gitignore (as `rails new` writes them) leave out.
  IGNORED = %w[.bundle config/master.key log/* tmp/* storage/* .generated].freeze
  CACHE_KINDS = %w[iseq yaml json].freeze

  # The code block after "<!-- recipe: NAME" in the README.
  def recipe(name)
    text = File.read(README)
    block = text[/<!-- recipe: #{Regexp.escape(name)}\b[^\n]*\n```\w*\n(.*?)^```/m, 1]
    block or flunk "README has no recipe #{name.inspect}"
  end

  # Runs +command+ with sh in a private mount namespace where +mounts+ ({ target => source })
  # are bind mounts (read-only when the source ends in ":ro"), in +dir+, as +uid+ (nil: root).
  def in_namespace(mounts, dir, command, env: {}, uid: nil)
    setup = mounts.flat_map do |target, spec|
      source, mode = spec.split(":", 2)
      lines = ["mount --bind #{source.shellescape} #{target.shellescape}"]
      lines << "mount -o remount,bind,ro #{target.shellescape}" if mode == "ro"
      lines
    end
    inner = uid ? "exec setpriv --reuid=#{uid} --regid=#{uid} --clear-groups sh -c #{command.shellescape}" : command
    script = [*setup, "cd #{dir.shellescape}", inner].join(" && ")
    full = RailsAppGenerator.clean_env(env)
    out, err, status = Open3.capture3(full, "unshare", "-m", "--propagation", "private", "sh", "-c", script)
    [out, err, status]
  end

  # Mount points the recipes name, made when missing (empty directories) and removed after.
  def with_mount_points(*dirs)
    made = dirs.reject { |d| File.directory?(d) }
    FileUtils.mkdir_p(made)
    yield
  ensure
    made&.each { |d| Dir.rmdir(d) if File.directory?(d) && Dir.empty?(d) }
  end

  # { "iseq" => { "hits" => 3, ... }, ..., "load_path" => {...} } from a LOADOUT_STATS report.
  def counters(stderr)
    report = stderr[STATS_REPORT] or flunk "no LOADOUT_STATS report:\n#{stderr}"
    counts = (CACHE_KINDS + ["load_path"]).to_h do |kind|
      line = report[/^  #{kind}: +(.*)$/, 1] or flunk "no #{kind} line:\n#{report}"
      [kind, line.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }]
    end
    prelude = report[/^  prelude: +(.*)$/, 1] # (only with the prelude on RUBYLIB)
    counts.merge("prelude" => prelude.to_s.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] })
  end

  # The boot compiled nothing: every cache lookup was a hit or a revalidation by digest, no
  # load-path listing was made from scratch, and the index answered as a warm boot does.
  def assert_compiled_nothing(stderr, warm, label)
    got = counters(stderr)
    CACHE_KINDS.each do |kind|
      c = got[kind]
      bad = %w[misses stale corrupt skipped compiles].to_h { |f| [f, c[f]] }.reject { |_, v| v.zero? }
      assert_empty bad, "#{label}: #{kind} lookups Ruby or Psych did themselves (#{c})"
    end
    assert_equal 0, got["load_path"]["rescans"], "#{label}: load path dirs listed from scratch (#{got["load_path"]})"
    assert_equal warm["load_path"]["misses"], got["load_path"]["misses"],
                 "#{label}: index answers (#{got["load_path"]})"
    got
  end

  def assert_check_hit(out, err, status, label)
    assert_equal 0, status.exitstatus, "#{label}: loadout check\n#{out}\n#{err}"
    assert_includes out, "verdict:    HIT", label
    assert_match(/^iseq: +(\d+) files: \1 hit$/, out, label)
  end

  # A copy of the generated app as its repository holds it (what git or a build context has).
  def source_tree(dest)
    FileUtils.cp_r(RailsAppGenerator.path, dest)
    IGNORED.each { |pattern| FileUtils.rm_rf(Dir.glob(File.join(dest, pattern), File::FNM_DOTMATCH)) }
    dest
  end

  test "the Dockerfile recipe: built as root at /rails, containers as another user after chown, " \
       "and the cache in the app elsewhere" do
    dockerfile = recipe("dockerfile")
    workdir = dockerfile[/^WORKDIR (\S+)$/, 1]
    env = dockerfile[/^ENV (.*?)(?=\n\n|\nFROM)/m, 1].gsub("\\\n", " ").shellsplit.to_h { |kv| kv.split("=", 2) }
    bundle_path = env.fetch("BUNDLE_PATH")
    build_stage, final_stage = dockerfile.split(/^FROM base\s*$/)
    runs = build_stage.scan(/^RUN (.*loadout.*)$/).flatten
    assert_equal 3, runs.size, "the build stage's loadout steps: #{runs}"
    prelude_dir = env.fetch("RUBYLIB")
    chown = final_stage[/(chown -R rails:rails [^\n]+)/, 1] or flunk "no chown in the final stage"
    assert_match(/^USER 1000:1000$/, final_stage)
    assert_equal "/rails", workdir

    with_files do |tmp|
      with_mount_points(workdir, bundle_path) do
        # COPY . . into the build stage's /rails, as root; the bundle is where `bundle install` put it.
        build = source_tree(File.join(tmp, "build"))
        mounts = { workdir => build, bundle_path => "#{BUNDLE}:ro" }
        runs.each do |step|
          out, err, status = in_namespace(mounts, workdir, step, env: env)
          assert status.success?, "RUN #{step}\n#{out}\n#{err}"
          if step.include?("loadout check")
            assert_includes out, "verdict:    HIT", out
            assert_match(%r{^prelude: +#{prelude_dir} \(on RUBYLIB\): \d+ files for Ruby .*as it was compiled$}, out)
          end
          assert_match(/^loadout precompile: boot `bin\/rails runner 1`/, out) if step.include?("precompile")
        end
        assert_equal 0o700, File.stat(File.join(build, "tmp/cache/loadout")).mode & 0o777

        # The final stage: COPY --from=build /rails /rails (times and owner kept, new inodes),
        # the chown as root, then the containers as the app's user.
        runtime = File.join(tmp, "runtime")
        FileUtils.cp_r(build, runtime, preserve: true)
        mounts = { workdir => runtime, bundle_path => "#{BUNDLE}:ro" }
        out, err, status = in_namespace(mounts, workdir, chown.sub("rails:rails", "#{APP_USER}:#{APP_USER}"))
        assert status.success?, "#{chown}\n#{out}\n#{err}"
        user_env = env.merge("HOME" => tmp, "SECRET_KEY_BASE" => SECRET)
        out, err, status = in_namespace(mounts, workdir, "bundle exec loadout check", env: user_env, uid: APP_USER)
        assert_check_hit(out, err, status, "a container's loadout check")
        # The chown moved the ctime of every file of the app: a container booting within the racy
        # window after it records stat entries the next boot cannot trust by stat (it revalidates
        # again, by digest). Containers start long after the image's chown; so do these (the check
        # above alone took less than the window on an idle machine: one file revalidated twice).
        sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)

        boot = "bin/rails runner 1"
        stats = user_env.merge("LOADOUT_STATS" => "1")
        boots = Array.new(4) do
          Thread.new { in_namespace(mounts, workdir, boot, env: stats, uid: APP_USER) }
        end.map(&:value)
        warm = in_namespace(mounts, workdir, boot, env: stats, uid: APP_USER)
        assert warm[2].success?, warm[1]
        warm_counts = counters(warm[1])
        boots.each_with_index do |(_, err, status), i|
          assert status.success?, "container #{i}: #{err}"
          got = assert_compiled_nothing(err, warm_counts, "container #{i}'s first boot")
          assert_operator got["iseq"]["hits"] + got["iseq"]["revalidated"], :>, 1000
          # RubyGems' and Bundler's files, from the prelude the chown gave to the app's user.
          assert_operator got["prelude"]["served"], :>, 100, err
        end
        CACHE_KINDS.each { |kind| assert_equal 0, warm_counts[kind]["revalidated"], "the boot after: plain hits" }

        # The README's other way: the cache left root's and readable (chmod -R a+rX, no chown of
        # tmp/cache): read-only for the app's user, said once, and still nothing compiled.
        readonly = File.join(tmp, "runtime-readonly")
        FileUtils.cp_r(build, readonly, preserve: true)
        FileUtils.chmod_R("a+rX", File.join(readonly, "tmp"))
        mounts = { workdir => readonly, bundle_path => "#{BUNDLE}:ro" }
        _, err, status = in_namespace(mounts, workdir, boot, env: stats, uid: APP_USER)
        assert status.success?, err
        assert_equal 1, err.scan(/^loadout: /).size, err
        assert_match(%r{^loadout: cache dir #{workdir}/tmp/cache/loadout is not writable .*; using the cache read-only},
                     err)
        got = assert_compiled_nothing(err, warm_counts, "a container reading a root-owned cache")
        assert_operator got["prelude"]["served"], :>, 100, err # (root's prelude, readable: trusted)

        # The README's target: the cache precompile made with the app at /rails (bundle at
        # /usr/local/bundle), copied into the app at its own path (bundle at the suite's path).
        with_rails_app do |app|
          FileUtils.rm_rf(File.join(app, CACHE))
          FileUtils.mkdir_p(File.dirname(File.join(app, CACHE)))
          FileUtils.cp_r(File.join(build, CACHE), File.join(app, CACHE), preserve: true)
          prod = { "RAILS_ENV" => "production", "SECRET_KEY_BASE" => SECRET }
          out, err, status = Open3.capture3(RailsAppGenerator.clean_env(prod), "bundle", "exec", "loadout", "check",
                                            chdir: app)
          assert_check_hit(out, err, status, "loadout check in the app")
          assert_includes out, "(recorded with the app at /rails: its files are checked here, under #{app})"
          first = run_rails(app, :warm, "bin/rails", "runner", "1", env: prod.merge("LOADOUT_STATS" => "1"))
          again = run_rails(app, :warm, "bin/rails", "runner", "1", env: prod.merge("LOADOUT_STATS" => "1"))
          assert first.success? && again.success?, first.describe + again.describe
          assert_compiled_nothing(first.stderr, counters(again.stderr), "the app's next boot")
        end
      end
    end
  end

  test "the GitHub Actions recipe: one job boots the app into the cache, " \
       "eight fresh clones elsewhere restore it and boot at once" do
    workflow = YAML.safe_load(recipe("github-actions"))
    jobs = workflow.fetch("jobs")
    build_job = jobs.fetch("boot-cache")
    test_job = jobs.fetch("test")
    workers = test_job.dig("strategy", "matrix", "worker")
    assert_equal 8, workers.size
    path = build_job["steps"].find { |s| s["uses"].to_s.start_with?("actions/cache/save") }.dig("with", "path")
    restore = test_job["steps"].find { |s| s["uses"].to_s.start_with?("actions/cache/restore") }
    assert_equal path, restore.dig("with", "path")
    app_command = "bin/rails test"
    build_runs = build_job["steps"].filter_map { |s| s["run"] }
    assert(build_runs.any? { |r| r.start_with?("bundle exec loadout check") }, "the build job checks its cache")
    test_runs = test_job["steps"].filter_map { |s| s["run"] }
    assert_equal app_command, test_runs.last
    test_runs = test_runs[0...-1]
    # GitHub's runners set CI=true; bundler-cache: true installs the bundle into vendor/bundle;
    # ${{ github.workspace }} is the checkout's directory.
    job_env = lambda do |job, dir|
      env = job.fetch("env", {}).transform_values { |v| v.to_s.gsub("${{ github.workspace }}", dir) }
      env.merge("CI" => "true")
    end
    assert_equal "${{ github.workspace }}/#{path}/prelude", build_job.dig("env", "RUBYLIB")
    assert_equal build_job.dig("env", "RUBYLIB"), test_job.dig("env", "RUBYLIB")
    prelude_step = build_runs.index { |r| r.start_with?("bundle exec loadout prelude") }
    precompile_step = build_runs.index { |r| r.include?("loadout precompile") }
    assert prelude_step && precompile_step && prelude_step < precompile_step, "the prelude before the precompile"

    with_files do |tmp|
      repo = File.join(tmp, "repo")
      source_tree(repo)
      File.write(File.join(repo, ".gitignore"),
                 "/.bundle\n/vendor/bundle\n/log/*\n/tmp/*\n/storage/*\n/config/master.key\n")
      git = lambda do |*args, dir: repo|
        quiet = { chdir: dir, out: File::NULL, err: File::NULL }
        system("git", "-c", "user.name=t", "-c", "user.email=t@t", *args, **quiet) or flunk("git #{args.join(" ")}")
      end
      git.("init", "-q")
      git.("add", "-A")
      git.("commit", "-q", "-m", "app")
      checkout = lambda do |dir|
        FileUtils.mkdir_p(File.dirname(dir))
        git.("clone", "-q", repo, dir, dir: tmp)
        system("cp", "-al", BUNDLE, File.join(dir, "vendor/bundle")) or flunk("cp -al")
        FileUtils.mkdir_p(File.join(dir, ".bundle"))
        File.write(File.join(dir, ".bundle/config"),
                   "---\nBUNDLE_PATH: \"vendor/bundle\"\nBUNDLE_DEPLOYMENT: \"true\"\n")
        dir
      end
      sh = ->(dir, cmd, env) { Open3.capture3(RailsAppGenerator.clean_env(env), "sh", "-c", cmd, chdir: dir) }

      build = checkout.(File.join(tmp, "runner-0/_work/app/app"))
      build_runs.each do |cmd|
        out, err, status = sh.(build, cmd, job_env.(build_job, build))
        if cmd.include?("loadout check")
          assert_check_hit(out, err, status, cmd)
        else
          assert status.success?, "#{cmd}\n#{out}\n#{err}"
        end
      end
      archive = File.join(tmp, "cache.tar")
      system("tar", "-C", build, "-cf", archive, path) or flunk("tar -c")

      dirs = workers.map { |w| checkout.(File.join(tmp, "runner-#{w}/_work/app-#{w}/app")) }
      dirs.each do |dir|
        system("tar", "-C", dir, "-xf", archive) or flunk("tar -x")
        test_runs.each do |cmd|
          out, err, status = sh.(dir, cmd, job_env.(test_job, dir))
          assert status.success?, "#{dir}: #{cmd}\n#{out}\n#{err}"
        end
      end
      # What the README says a worker may run after the restore (once here: it costs a second).
      out, err, status = sh.(dirs.last, "bundle exec loadout check", job_env.(test_job, dirs.last))
      assert_check_hit(out, err, status, "loadout check in #{dirs.last}")
      prelude_dir = job_env.(test_job, dirs.last).fetch("RUBYLIB")
      assert_match(%r{^prelude: +#{prelude_dir} \(on RUBYLIB\): \d+ files for Ruby .*as it was compiled$}, out)
      # Each `cp -al` moved the ctime of every bundle file (hard links share the inode): a first
      # boot within the racy window after the last one would record stat entries the next boot
      # cannot trust by stat (it revalidates again, by digest). A worker's own tar restore has no
      # such neighbour; here the window is waited out so "the boot after" can be plain hits.
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      boot = "bin/rails runner 1" # in place of the workers' `bin/rails test`: the same boot, counted
      stats = ->(dir) { job_env.(test_job, dir).merge("LOADOUT_STATS" => "1") }
      boots = dirs.map { |dir| Thread.new { sh.(dir, boot, stats.(dir)) } }.map(&:value)
      warm = sh.(dirs.first, boot, stats.(dirs.first))
      assert warm[2].success?, warm[1]
      warm_counts = counters(warm[1])
      boots.zip(dirs).each do |(_, err, status), dir|
        assert status.success?, "#{dir}: #{err}"
        got = assert_compiled_nothing(err, warm_counts, "the first boot in #{dir}")
        assert_operator got["iseq"]["revalidated"], :>, 0, "a fresh clone's app files are revalidated by digest"
        # RubyGems' and Bundler's files, from the prelude restored with the cache.
        assert_operator got["prelude"]["served"], :>, 100, err
      end
      CACHE_KINDS.each { |kind| assert_equal 0, warm_counts[kind]["revalidated"], "the boot after: plain hits" }
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"
require "loadout/store"
require "loadout/compile_cache/entry_checker"

# `loadout precompile` fills exactly the YAML/JSON entries the app's next boot reads, even when
# the app reads them under other settings than the CLI runs with: Rails sets
# Encoding.default_internal/external to UTF-8 (config.encoding) and registers Psych tags, I18n
# loads locales with unsafe_load_file(symbolize_names: true, freeze: true), and the CLI here
# runs in the C locale (default_external US-ASCII). Proven by `loadout check` saying HIT and the
# boot's own LOADOUT_STATS counting no miss.
class PrecompileValuesTest < Minitest::Test
  include Loadout::TestSupport::App

  EXE = File.expand_path("../../exe/loadout", __dir__)

  BOOT = <<~'RUBY'
    unless ENV["WITHOUT_LOADOUT"]
      ENV["LOADOUT_CACHE_DIR"] = File.join(__dir__, "tmp/cache")
      require "loadout/setup" # as the README says; LOADOUT_STATS=1 prints the report at exit
    end
    # What Rails does while it boots: config.encoding, and its Psych tags.
    Encoding.default_external = Encoding::UTF_8
    Encoding.default_internal = Encoding::UTF_8
    require "yaml"
    require "json"
    Psych.load_tags["!ruby/object:ActiveSupport::TimeWithZone"] = "ActiveSupport::TimeWithZone"
    require_relative "lib/app"
    out = []
    Dir[File.join(__dir__, "config/locales/*.yml")].sort.each do |f|
      out << YAML.unsafe_load_file(f, symbolize_names: true, freeze: true) # I18n's load_yml
    end
    out << YAML.load_file(File.join(__dir__, "config/settings.yml"))
    out << JSON.load_file(File.join(__dir__, "data/items.json"))
    if ENV["APP_EXTRA_CALLS"] # shapes no default covers: only a recorded boot tells precompile
      out << YAML.safe_load_file(File.join(__dir__, "config/settings.yml"), symbolize_names: true, aliases: true)
      out << JSON.load_file(File.join(__dir__, "data/items.json"), { symbolize_names: true })
      out << YAML.unsafe_load_file(File.join(__dir__, "config/tagged.yml")) # left to Psych (tags)
    end
    puts Marshal.dump(out).unpack1("H*")
  RUBY

  FILES = [
    ["boot.rb", BOOT], ["lib/app.rb", "module App; end\n"],
    ["config/locales/en.yml", "en:\n  hello: Hello!\n  date:\n    order:\n    - :year\n    - :month\n"],
    ["config/locales/fr.yml", "fr:\n  hello: Bonjour !\n  errors:\n    blank: \"doit \u00eatre rempli(e)\"\n"],
    ["config/settings.yml", "production:\n  pool: 5\n  host: db\n  ratio: 0.5\n"],
    ["config/tagged.yml", "span: !ruby/range 1..3\n"],
    ["data/items.json", %({"items": [{"name": "caf\u00e9", "price": 2.5}], "count": 1})]
  ].freeze

  # The CLI in the C locale, without the load-path index (another part of loadout, checked
  # elsewhere), so the verdict is about the compile cache alone.
  CLI_ENV = { "LANG" => "C", "LC_ALL" => "C", "LOADOUT_DISABLE_LOAD_PATH_CACHE" => "1" }.freeze

  def loadout(app, *args)
    spawn_ruby(EXE, *args, "--cache-dir", File.join(app, "tmp/cache"), chdir: app, env: CLI_ENV)
  end

  def boot!(app, env = {})
    result = spawn_ruby("boot.rb", chdir: app, env: { "LOADOUT_STATS" => "1" }.merge(env))
    assert result.success?, result.stdout + result.stderr
    result
  end

  # { "yaml" => { "hits" => "3", ... }, "json" => {...} } from the LOADOUT_STATS report.
  def value_stats(stderr)
    stderr.scan(/^  (yaml|json):\s+(.*)$/).to_h { |kind, rest| [kind, rest.scan(/(\w+)=(\S+)/).to_h] }
  end

  def assert_served(stats, kind, count)
    assert_equal "0", stats.dig(kind, "misses"), stats.inspect
    assert_equal "0", stats.dig(kind, "stale"), stats.inspect
    assert_equal count, stats.dig(kind, "hits").to_i + stats.dig(kind, "revalidated").to_i, stats.inspect
  end

  def plain_output(app, env = {})
    result = spawn_ruby("boot.rb", chdir: app, env: env.merge("WITHOUT_LOADOUT" => "1"))
    assert result.success?, result.stderr
    result.stdout
  end

  def check_file(app, path)
    Loadout::Store.open(File.join(app, "tmp/cache/store"), readonly: true) do |store|
      Loadout::CompileCache.check(store: store, path: File.join(app, path), kind: :yaml, roots: [app])
    end
  end

  test "after clean --all and precompile, check says HIT and a Rails-like first boot misses no YAML or JSON" do
    with_app_files do |app|
      assert loadout(app, "clean", "--all").success?
      pre = loadout(app, "precompile", "-j", "0")
      assert pre.success?, pre.stdout + pre.stderr
      check = loadout(app, "check")
      assert_equal 0, check.status.exitstatus, check.stdout + check.stderr
      assert_match(/^yaml:\s+4 files: 4 hit$/, check.stdout)
      assert_match(/^json:\s+1 file: 1 hit$/, check.stdout)
      assert_match(/^verdict:\s+HIT/, check.stdout)

      first = boot!(app)
      assert_equal plain_output(app), first.stdout
      stats = value_stats(first.stderr)
      assert_served(stats, "yaml", 3) # two locales with I18n's call, settings with load_file
      assert_served(stats, "json", 1)
      assert_equal "0", stats.dig("yaml", "skipped"), stats.inspect
    end
  end

  test "call shapes only the app uses are recorded by its boot and filled by the next precompile" do
    with_app_files do |app|
      env = { "APP_EXTRA_CALLS" => "1" }
      boot!(app, env) # records the shapes
      assert loadout(app, "clean", "--kind", "yaml", "--kind", "json").success? # the boot record stays
      pre = loadout(app, "precompile", "-j", "0")
      assert pre.success?, pre.stdout + pre.stderr
      check = loadout(app, "check")
      assert_equal 0, check.status.exitstatus, check.stdout + check.stderr
      assert_match(/^yaml:\s+4 files: 4 hit$/, check.stdout)
      status, reason = check_file(app, "config/tagged.yml")
      assert_equal :hit, status
      assert_match(/left to Psych: it uses YAML tags/, reason)

      first = boot!(app, env)
      assert_equal plain_output(app, env), first.stdout
      stats = value_stats(first.stderr)
      assert_served(stats, "yaml", 4)
      assert_served(stats, "json", 2)
      assert_equal "1", stats.dig("yaml", "skipped"), stats.inspect
      assert_equal "custom_tags:1", stats.dig("yaml", "reasons"), stats.inspect
    end
  end

  def with_app_files
    with_files(FILES) do |dir|
      # Past the racy window of the files just written, so entries made now are stat hits.
      sleep((Loadout::CompileCache::Freshness::RACY_NS / 1e9) + 0.2)
      yield dir
    end
  end
end

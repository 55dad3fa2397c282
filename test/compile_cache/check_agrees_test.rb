# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"
require_relative "../rails/generate_app"

# `loadout check` answers for the boot that follows (issue #22, item 2): in an app with its own
# bundle (json 2.x or 3.x, i18n with the bundle's psych), after `precompile --gemfile` or after a
# boot recorded what it loads, check's verdict for every YAML/JSON file is what the next boot
# then does with it, told by that boot's own instrumentation events. Run the way the README says:
# `bundle exec loadout precompile --gemfile && bundle exec loadout check --gemfile`.
class CompileCacheCheckAgreesTest < Minitest::Test
  include Loadout::TestSupport::App

  ROOT = File.expand_path("../..", __dir__)
  EXE = File.join(ROOT, "exe/loadout")
  SIDE_GEMS = File.join(ROOT, "vendor/side-gems")
  RAILS_GEMS = File.join(ROOT, "vendor/rails-bundle/ruby/#{RbConfig::CONFIG["ruby_version"]}")
  # The psych of the Rails bundle's lock for this Ruby (5.5.0 up to 3.3); the lock of 3.4 and
  # later has none (nothing there asks for more than Ruby's default psych): that one then.
  PSYCH = File.read("#{RailsAppGenerator::GEMFILE}.lock")[/^    psych \(([^)]+)\)$/, 1]

  # The app's boot: every data file it loads, and the compile cache's event for each.
  BOOT = <<~'RUBY'
    require "bundler/setup"
    events = {}
    unless ENV["WITHOUT_LOADOUT"]
      require "loadout"
      Loadout.instrumentation = lambda do |event, path, **info|
        events[path.to_s] = [event, info[:reason]] if %i[yaml json].include?(info[:cache])
      end
      Loadout.setup(cache_dir: File.join(__dir__, "tmp/cache/loadout"), root: __dir__) # the CLI's default
    end
    out = []
    if ENV["APP"] == "json"
      require "json"
      out << JSON.load_file(File.join(__dir__, "data/items.json"))
      out << JSON.load_file(File.join(__dir__, "data/names.json"))
      # (A positional options Hash is json 2.x's; 3.x takes keywords only.)
      more = File.join(__dir__, "data/more.json")
      out << JSON.load_file(more, { symbolize_names: true }) if ENV["EXTRA"] && JSON::VERSION < "3"
      out << JSON.load_file(more, symbolize_names: true, freeze: true) if ENV["EXTRA"]
    else
      # What Rails does: its encodings and Psych tags; then I18n loads the locales.
      Encoding.default_external = Encoding::UTF_8
      Encoding.default_internal = Encoding::UTF_8
      require "yaml"
      Psych.load_tags["!ruby/object:ActiveSupport::TimeWithZone"] = "ActiveSupport::TimeWithZone"
      require "i18n"
      I18n.load_path += Dir[File.join(__dir__, "config/locales/*.yml")].sort
      I18n.available_locales = %i[en fr nl]
      out << %i[en fr nl].map { |l| I18n.t(:hello, locale: l) }
    end
    $stdout.puts Marshal.dump([out.inspect, events]).unpack1("H*")
  RUBY

  # items.json is ASCII; names.json is not (json 3 reads UTF-8 whatever the locale: the CLI runs
  # in the C locale, and must not call it unloadable).
  JSON_FILES = [["data/items.json", %({"items": [{"name": "tea", "price": 2.5}], "count": 1})],
                ["data/names.json", %({"names": ["caf\u00e9", "\u65e5\u672c"]})],
                ["data/more.json", %({"more": [1, 2, {"k": "v"}]})]].freeze
  LOCALES = [
    ["config/locales/en.yml", "en:\n  hello: Hello\n  date:\n    order:\n    - :year\n    - :month\n"],
    ["config/locales/fr.yml", "fr:\n  base: &b {one: un}\n  hello: Bonjour\n  again: *b\n"],
    # Tagged: Psych's while custom tags are registered.
    ["config/locales/nl.yml", "nl:\n  hello: Hallo\n  r: !ruby/range 1..2\n"]
  ].freeze

  def gemfile(app)
    psych = PSYCH ? %(gem "psych", "#{PSYCH}") : %(gem "psych")
    gems = app == "json" ? [%(gem "json", "#{@json}")] : [%(gem "i18n"), psych]
    ["source \"https://rubygems.org\"", *gems, %(gem "loadout", path: #{ROOT.dump})].join("\n") << "\n"
  end

  def env
    gem_path = [@app == "json" ? SIDE_GEMS : RAILS_GEMS, Gem.default_dir].join(File::PATH_SEPARATOR)
    { "GEM_PATH" => gem_path, "APP" => @app, "LANG" => "C", "LC_ALL" => "C" }
  end

  def bundle_exec(dir, *args, extra: {})
    spawn_ruby("-S", "bundle", "exec", "ruby", *args, chdir: dir, env: env.merge(extra))
  end

  # [exit status, { path => status } of the files check says will not hit, output].
  def check(dir, *args)
    result = bundle_exec(dir, EXE, "check", *args)
    output = result.stdout + result.stderr
    refute_match(/\.\.\. \d+ more/, output, "every file check does not call a hit is listed")
    listed = result.stdout.scan(/^  (\w+): (\S+\.(?:yml|json))(?: \(|$)/).to_h { |status, path| [path, status] }
    [result.status.exitstatus, listed, output]
  end

  # [output, { path => event } of every YAML/JSON file the boot loaded].
  def boot(dir, extra = {})
    result = bundle_exec(dir, "boot.rb", extra: extra)
    assert result.success?, result.stdout + result.stderr
    Marshal.load([result.stdout.lines.last.chomp].pack("H*")) # rubocop:disable Security/MarshalLoad
  end

  # Check's verdict, then the boot's, file by file: check lists (as missing or stale) exactly the
  # files the boot then misses, and says HIT exactly when the boot misses nothing.
  def assert_agree(dir, check_args, boot_env = {}, expect_hit: true)
    status, listed, output = check(dir, *check_args)
    plain, = boot(dir, boot_env.merge("WITHOUT_LOADOUT" => "1"))
    out, events = boot(dir, boot_env)
    assert_equal plain, out
    refute_empty events
    events.each do |path, (event, reason)|
      missed = %i[miss stale corrupt].include?(event)
      said = listed[path]
      assert_equal missed, %w[missing stale].include?(said),
                   "#{path}: the boot did #{event} (#{reason.inspect}), check said #{said || "hit"}:\n#{output}"
      assert_nil said, "#{path}: check said #{said}, the boot did #{event}:\n#{output}" unless missed
    end
    missed = events.count { |_, (event, _)| %i[miss stale corrupt].include?(event) }
    assert_equal(expect_hit ? 0 : 2, status, output)
    assert_equal expect_hit, missed.zero?, events.inspect
  end

  def with_bundle(app)
    @app = app
    with_files([["Gemfile", gemfile(app)], ["boot.rb", BOOT], *(app == "json" ? JSON_FILES : LOCALES)]) do |dir|
      install = spawn_ruby("-S", "bundle", "install", "--local", "--quiet", chdir: dir, env: env)
      assert install.success?, install.stdout + install.stderr
      sleep 2.2 # past the racy window of the files just written: entries made now are stat hits
      yield dir
    end
  end

  %w[2.21.2 3.1.0].each do |version|
    test "json #{version}: precompile --gemfile, then check --gemfile says what the next boot does" do
      @json = version
      with_bundle("json") do |dir|
        pre = bundle_exec(dir, EXE, "precompile", "--gemfile")
        assert pre.success?, pre.stdout + pre.stderr
        assert_agree(dir, ["--gemfile"])

        # Shapes only the app uses: recorded by its boot, filled by the next precompile.
        boot(dir, { "EXTRA" => "1" })
        assert bundle_exec(dir, EXE, "clean", "--kind", "json").success?
        assert bundle_exec(dir, EXE, "precompile", "--gemfile").success?
        assert_agree(dir, [], { "EXTRA" => "1" })

        File.write(File.join(dir, "data/items.json"), %({"count": 2}))
        assert_agree(dir, [], { "EXTRA" => "1" }, expect_hit: false)
      end
    end
  end

  test "YAML via I18n (with the bundle's psych, Rails' tags): check says what the next boot does" do
    with_bundle("i18n") do |dir|
      pre = bundle_exec(dir, EXE, "precompile", "--gemfile")
      assert pre.success?, pre.stdout + pre.stderr
      assert_agree(dir, ["--gemfile"])
      assert_agree(dir, []) # the boot's own record of what it loaded
      File.write(File.join(dir, "config/locales/en.yml"), "en:\n  hello: Hi\n")
      assert_agree(dir, [], expect_hit: false)
    end
  end
end

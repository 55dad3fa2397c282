# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# The image-build gate of the README, `loadout precompile --gemfile && loadout check --gemfile`,
# in an app whose bundle holds json 2.x (Ruby's own: 2.6.1 on Ruby 3.1; or 2.21) or 3.x (keyword-only
# JSON.load_file): check exits 0, and the boot that follows agrees (every JSON, YAML and Ruby
# lookup of the app's a hit or a revalidation). The issue's reproduction: with json 3.1 check said
# "json: 133 files: 133 missing (no entry)" although the boot hit them (check looked under
# another call shape's variant).
class PrecompileJsonVersionsTest < Minitest::Test
  include Loadout::TestSupport::App

  SIDE_GEMS = File.expand_path("../../vendor/side-gems", __dir__)
  REPO = File.expand_path("../..", __dir__)
  EXE = File.expand_path("../../exe/loadout", __dir__)

  APP = <<~'RUBY'
    require "bundler/setup"
    require "loadout/setup"
    require "json"
    require "yaml"
    puts JSON::VERSION
    p JSON.load_file(File.join(__dir__, "data.json"))
    p YAML.load_file(File.join(__dir__, "config/app.yml"))
  RUBY

  def with_json_app(version)
    gemfile = %(source "https://rubygems.org"\ngem "json", #{version.dump}\ngem "loadout", path: #{REPO.dump}\n)
    files = [["Gemfile", gemfile], ["app.rb", APP], ["data.json", %({"items": [1, 2], "name": "caf\u00e9"}\n)],
             ["config/app.yml", "pool: 5\nhost: db\n"]]
    with_files(files) do |app|
      # Side gems (json 2.21, 3.1) beside Ruby's own; no network: `bundle lock --local`.
      env = clean_env("GEM_PATH" => [SIDE_GEMS, *Gem.default_path].join(File::PATH_SEPARATOR),
                      "BUNDLE_GEMFILE" => File.join(app, "Gemfile"), "LOADOUT_PURE" => ENV["LOADOUT_PURE"])
      ENV.each_key { |k| env[k] = nil if k.start_with?("BUNDLER_ORIG_") }
      out, status = Open3.capture2e(env, "bundle", "lock", "--local", chdir: app)
      assert status.success?, out
      yield app, env
    end
  end

  def run_in(app, env, *cmd)
    out, err, status = Open3.capture3(env, *cmd, chdir: app)
    [out, err, status]
  end

  # This Ruby's own json (2.6.1 on Ruby 3.1), and the side gems bin/setup-deps installs.
  DEFAULT_JSON = Dir[File.join(Gem.default_specifications_dir, "json-*.gemspec")].map do |spec|
    File.basename(spec, ".gemspec").delete_prefix("json-")
  end.max_by { |v| Gem::Version.new(v) }

  [DEFAULT_JSON, "2.21.2", "3.1.0"].compact.uniq.each do |version|
    test "json #{version}: precompile --gemfile && check --gemfile exits 0, and the next boot hits what check said" do
      with_json_app(version) do |app, env|
        out, err, status = run_in(app, env, "bundle", "exec", EXE, "precompile", "--gemfile", "-j", "1")
        assert status.success?, out + err
        out, err, status = run_in(app, env, "bundle", "exec", EXE, "check", "--gemfile")
        assert_equal 0, status.exitstatus, "loadout check --gemfile with json #{version}:\n#{out}#{err}"
        assert_match(/^json: +1 file: 1 hit$/, out)

        out, err, status = run_in(app, env.merge("LOADOUT_STATS" => "1"), RbConfig.ruby, "app.rb")
        assert status.success?, err
        assert_equal version, out.lines.first.chomp
        %w[iseq yaml json].each do |kind|
          line = err[/^  #{kind}: +(.*)$/, 1] or flunk(err)
          counts = line.scan(/(\w+)=(\d+)\b/).to_h { |k, v| [k, v.to_i] }
          assert_equal [0, 0, 0], counts.values_at("misses", "stale", "skipped"),
                       "#{kind} with json #{version}: #{line}"
          assert_operator counts["hits"] + counts["revalidated"], :>, 0, "#{kind}: #{line}"
        end
      end
    end
  end
end

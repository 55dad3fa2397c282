# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"
require_relative "../integration/app_helper"
require_relative "../load_path/backdate"

module Loadout
  module TestSupport
    # A small real app for the CLI's subprocess tests, shaped like the apps users run the CLI
    # in: a Gemfile and lockfile, a vendored bundle inside the app root (gems copied from this
    # checkout's vendor/bundle, plus an installed fake gem whose specs, fixtures and generator
    # templates hold YAML and Ruby that do not parse), a path gem, config files the boot reads
    # with YAML.load_file / JSON.load_file, and files the boot never loads. loadout comes from
    # RUBYLIB, as a bundle would put its lib on the load path.
    #
    # The template is built once per test process (`bundle lock --local`: no network) and copied
    # for each test.
    module GeneratedApp
      include App
      include Backdate
      EXE = File.expand_path("../../exe/loadout", __dir__)
      BUNDLE = File.expand_path("../../vendor/bundle/ruby/#{RbConfig::CONFIG["ruby_version"]}", __dir__)
      GEMS = %w[rake minitest msgpack].freeze

      # Files the boot (app.rb) loads, relative to the app, and files it never loads.
      LOADED_DATA = %w[config/app.yml config/settings.json].freeze
      BROKEN_YAML = "{{ not: [yaml"

      BOOT = <<~RUBY
        # Like a Rails app's config/boot.rb: bundler first, then loadout.
        ENV["BUNDLE_GEMFILE"] ||= File.expand_path("../Gemfile", __dir__)
        require "bundler/setup"
        require "loadout/setup" unless ENV["APP_WITHOUT_LOADOUT"]
      RUBY

      MAIN = <<~RUBY
        require_relative "config/boot"
        require "yaml"
        require "json"
        require "rake"
        require "msgpack"
        require "fakeyaml"
        require "widget"
        require_relative "lib/shop"
        app = YAML.load_file(File.join(__dir__, "config/app.yml"))
        settings = JSON.load_file(File.join(__dir__, "config/settings.json"))
        puts "shop=\#{Shop.total([1, 2, 3])} app=\#{app.inspect} settings=\#{settings.inspect}"
        puts "fakeyaml=\#{Fakeyaml::DATA.inspect} widget=\#{Widget.describe}"
        puts "loadout=\#{defined?(Loadout::Boot) && Loadout::Boot.config ? "on" : "off"}"
      RUBY

      TEMPLATE_FILES = [
        ["config/boot.rb", BOOT],
        ["app.rb", MAIN],
        ["config/app.yml", "name: shop\nitems: [1, 2]\n"],
        ["config/settings.json", %({"currency": "EUR", "tax": 0.2}\n)],
        ["lib/shop.rb", <<~RUBY],
          require_relative "shop/pricing"
          module Shop
            def self.total(xs)
              Pricing.sum(xs)
            end
          end
        RUBY
        ["lib/shop/pricing.rb", <<~RUBY],
          module Shop
            module Pricing
              def self.sum(xs)
                xs.sum
              end
            end
          end
        RUBY
        ["lib/shop/unused.rb", "module Shop\n  UNUSED = true\nend\n"],
        ["lib/templates/model.rb", "class <%= name %> < ApplicationRecord\nend\n"],
        ["test/fixtures/broken.yml", "<% 3.times do |i| %>\nrow_<%= i %>: {{\n<% end %>\n"],
        ["test/fixtures/good.yml", "one: 1\n"],
        ["gems/widget/widget.gemspec", <<~RUBY],
          Gem::Specification.new do |s|
            s.name = "widget"
            s.version = "0.1.0"
            s.summary = "a path gem"
            s.authors = ["test"]
            s.files = []
            s.require_paths = ["lib"]
          end
        RUBY
        ["gems/widget/lib/widget.rb", <<~RUBY],
          require "yaml"
          module Widget
            DEFAULTS = YAML.load_file(File.join(__dir__, "widget/defaults.yml"))
            def self.describe
              "widget \#{DEFAULTS["size"]}"
            end
          end
        RUBY
        ["gems/widget/lib/widget/defaults.yml", "size: 3\n"],
        ["gems/widget/lib/widget/templates/config.yml", "<%= config %>: {{\n"],
        [".bundle/config", "---\nBUNDLE_PATH: \"vendor/bundle\"\n"]
      ].freeze

      # The fake gem installed into the vendored bundle: what a gem ships besides what it loads.
      FAKEYAML = [
        ["lib/fakeyaml.rb", <<~RUBY],
          require "yaml"
          module Fakeyaml
            DATA = YAML.load_file(File.join(__dir__, "fakeyaml/data.yml"))
          end
        RUBY
        ["lib/fakeyaml/data.yml", "types: [a, b]\n"],
        ["lib/generators/fakeyaml/templates/config.yml", "<%= app_name %>:\n  key: {{ value\n"],
        ["lib/generators/fakeyaml/templates/model.rb", "class <%= class_name %>\nend\n"],
        ["spec/fixtures/broken.yml", BROKEN_YAML],
        ["spec/fixtures/data.json", "{not json"],
        ["spec/fakeyaml_spec.rb", "describe Fakeyaml do\nend\n"]
      ].freeze

      class << self
        attr_accessor :template
      end

      # Yields the real path of a fresh copy of the app.
      def with_generated_app
        with_files do |tmp|
          app = File.join(tmp, "app")
          # Times kept: every file and dir was "checked out" an hour ago, outside the racy window
          # in which a boot rechecks an entry it just wrote (which would make warm boots write).
          FileUtils.cp_r(generated_template, app, preserve: true)
          yield app
        end
      end

      # Runs `ruby ARGS` in +app+ (its own process group, waited for: see App#wait_for_group);
      # as an unprivileged user when asked and this process is root (root ignores file modes).
      def app_ruby(app, *args, env: {}, unprivileged: false)
        full = clean_env({ "RUBYLIB" => LIB }.merge(env))
        ENV.each_key { |k| full[k] = nil if k.start_with?("BUNDLER_ORIG_", "BUNDLE_") }
        cmd = [RbConfig.ruby, *args]
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd] if unprivileged && root?
        out, err, status = Open3.capture3(full, *cmd, chdir: app, pgroup: true)
        wait_for_group(status.pid)
        Subprocess::Result.new(out, err, status)
      end

      def boot_generated!(app, env: {})
        result = app_ruby(app, "app.rb", env: env)
        assert result.success?, "app boot failed (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
        result
      end

      # `loadout ARGS` in +app+; asserts the exit status when +status+ is given.
      def loadout(app, *args, status: nil, env: {}, unprivileged: false)
        result = app_ruby(app, EXE, *args, env: env, unprivileged: unprivileged)
        unless status.nil?
          assert_equal status, result.status.exitstatus,
                       "loadout #{args.join(" ")}:\n#{result.stdout}\n#{result.stderr}"
        end
        result
      end

      def cache_dir(app)
        File.join(app, "tmp/cache/loadout")
      end

      private

      def generated_template
        template = GeneratedApp.template
        return template if template && File.directory?(template)

        dir = Dir.mktmpdir("loadout-generated-app")
        at_exit { FileUtils.rm_rf(dir) }
        template = File.join(dir, "app")
        build_template(template)
        GeneratedApp.template = template
      end

      def build_template(app)
        write_files(app, TEMPLATE_FILES)
        bundle = File.join(app, "vendor/bundle/ruby", RbConfig::CONFIG["ruby_version"])
        specs = GEMS.map { |name| Dir.glob(File.join(BUNDLE, "specifications", "#{name}-*.gemspec")).first }
        specs.each do |spec|
          full = File.basename(spec, ".gemspec")
          FileUtils.mkdir_p(File.join(bundle, "specifications"))
          FileUtils.cp(spec, File.join(bundle, "specifications"))
          FileUtils.mkdir_p(File.join(bundle, "gems"))
          FileUtils.cp_r(File.join(BUNDLE, "gems", full), File.join(bundle, "gems", full))
          Dir.glob(File.join(BUNDLE, "extensions", "*", "*", full)).each do |ext|
            target = File.join(bundle, ext.delete_prefix(BUNDLE))
            FileUtils.mkdir_p(File.dirname(target))
            FileUtils.cp_r(ext, target)
          end
        end
        install_fakeyaml(bundle)
        gemfile = <<~RUBY
          source "https://rubygems.org"
          #{GEMS.map { |g| "gem #{g.inspect}" }.join("\n")}
          gem "fakeyaml"
          gem "widget", path: "gems/widget"
        RUBY
        File.write(File.join(app, "Gemfile"), gemfile)
        env = clean_env("BUNDLE_GEMFILE" => File.join(app, "Gemfile"))
        ENV.each_key { |k| env[k] = nil if k.start_with?("BUNDLER_ORIG_") }
        out, status = Open3.capture2e(env, "bundle", "lock", "--local", chdir: app)
        raise "bundle lock --local failed in #{app}:\n#{out}" unless status.success?

        time = Time.now - 3600
        Dir.glob("**/*", File::FNM_DOTMATCH, base: app).each do |rel|
          File.utime(time, time, File.join(app, rel)) unless rel.end_with?("/.", "/..") || rel == "." || rel == ".."
        end
        backdate(app)
      end

      def install_fakeyaml(bundle)
        write_files(File.join(bundle, "gems/fakeyaml-1.0.0"), FAKEYAML)
        spec = <<~RUBY
          Gem::Specification.new do |s|
            s.name = "fakeyaml"
            s.version = "1.0.0"
            s.summary = "a gem with YAML it never loads"
            s.authors = ["test"]
            s.files = #{FAKEYAML.map(&:first).inspect}
            s.require_paths = ["lib"]
          end
        RUBY
        File.write(File.join(bundle, "specifications/fakeyaml-1.0.0.gemspec"), spec)
      end
    end
  end
end

# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require_relative "../integration/app_helper"

module Loadout
  module TestSupport
    # A store's life through `bundle update`s: an app whose $LOAD_PATH holds one versioned gem
    # dir (GEM_PATH/gems/widget-N/lib, 200 files) that each upgrade replaces with the next version
    # (the old dir removed), booted once after each upgrade. Used by test/integration/
    # eviction_test.rb and bench/eviction.rb.
    class GemUpgrades
      include App # wait_for_group

      LIB = File.expand_path("../../lib", __dir__)
      FILES = 200

      BOOT = <<~'RUBY'
        app = File.expand_path(__dir__)
        version = ENV.fetch("WIDGET_VERSION")
        $LOAD_PATH.unshift(File.join(ENV.fetch("GEM_PATH"), "gems", "widget-#{version}", "lib"))
        require "loadout"
        Loadout.setup(cache_dir: File.join(app, "tmp/cache/loadout"), root: app)
        require "widget"
        loaded = $LOADED_FEATURES.grep(%r{/gems/widget-})
        puts "widget=#{Widget::VERSION} sum=#{Widget.sum} files=#{loaded.size} " \
             "versions=#{loaded.map { |f| f[%r{widget-(\d+)/}, 1] }.uniq.join(",")}"
      RUBY

      attr_reader :dir, :app, :gem_home

      def initialize(dir)
        @dir = dir
        @app = File.join(dir, "app")
        @gem_home = File.join(dir, "gems")
        FileUtils.mkdir_p(@app)
        File.write(File.join(@app, "Gemfile"), "")
        File.write(File.join(@app, "boot.rb"), BOOT)
      end

      def store_path
        File.join(@app, "tmp/cache/loadout/store")
      end

      def store_size
        File.exist?(store_path) ? File.size(store_path) : 0
      end

      # Installs widget-+version+ (200 files of a few methods each) and removes +remove+'s dir.
      def install(version, remove: nil)
        lib = File.join(@gem_home, "gems", "widget-#{version}", "lib")
        FileUtils.mkdir_p(File.join(lib, "widget"))
        requires = Array.new(FILES) do |i|
          File.write(File.join(lib, "widget", format("part%03d.rb", i)), part(version, i))
          %(require "widget/#{format("part%03d", i)}")
        end
        File.write(File.join(lib, "widget.rb"), <<~RUBY)
          module Widget
            VERSION = #{version}
            PARTS = []
            def self.sum = PARTS.sum
          end
          #{requires.join("\n")}
        RUBY
        FileUtils.rm_rf(File.join(@gem_home, "gems", "widget-#{remove}")) if remove
      end

      # What a correct boot of +version+ prints.
      def expected(version)
        sum = Array.new(FILES) { |i| version * 1000 + i }.sum
        "widget=#{version} sum=#{sum} files=#{FILES + 1} versions=#{version}\n"
      end

      # Boots the app with widget-+version+ (and waits for its process group). Returns
      # [stdout, stderr, status].
      def boot(version, env: {})
        env = boot_env.merge("GEM_PATH" => @gem_home, "WIDGET_VERSION" => version.to_s).merge(env)
        out, err, status = Open3.capture3(env, RbConfig.ruby, "-I", LIB, "boot.rb", chdir: @app, pgroup: true)
        wait_for_group(status.pid)
        [out, err, status]
      end

      private

      def part(version, i)
        <<~RUBY
          module Widget
            class Part#{i}
              def initialize(x) = @x = x
              def scaled(factor) = @x * factor + #{i}
              def label = "widget #{version} part #{i}: \#{@x}"
              def pairs = (1..3).map { |n| [n, scaled(n)] }.to_h
            end
            PARTS << #{version * 1000 + i}
          end
        RUBY
      end

      def boot_env
        env = ENV.keys.grep(/\A(LOADOUT_|BUNDLE_|BUNDLER_|GEM_|RUBY)/).to_h { |k| [k, nil] }
        env["LOADOUT_PURE"] = ENV["LOADOUT_PURE"]
        env["LOADOUT_QUIET_BACKEND"] = "1"
        env
      end
    end
  end
end

# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require_relative "backdate"
require_relative "../integration/app_helper"

module Loadout
  module TestSupport
    # Boots copies of test/fixtures/app the way a real app is booted: loadout is found through
    # RUBYLIB (as bundler would put the gem's lib on the load path), so a child
    # `ruby -rbundler/setup` (what `loadout check` / `precompile` ask) sees the same $LOAD_PATH
    # as the app's config/boot.rb. The repo's lib/ is copied: other work changes it while the
    # tests run, and it is a volatile $LOAD_PATH item whose listing must stay fresh.
    module AppBoot
      include App
      include Backdate
      EXE = File.expand_path("../../exe/loadout", __dir__)

      # Yields [app, lib]: a copy of the fixture app and of lib/, every dir backdated (a tree
      # checked out earlier: no listing is "racily clean").
      def with_booted_app
        with_app do |app|
          lib = File.join(File.dirname(app), "loadout_lib")
          FileUtils.cp_r(LIB, lib)
          backdate(File.dirname(app))
          yield app, lib
        end
      end

      # Runs ruby ARGS in +app+ with +lib+ on RUBYLIB; the compile cache is off so these tests
      # are about the load path index alone.
      def ruby_in(app, lib, *args, env: {})
        full = clean_env({ "RUBYLIB" => lib, "LOADOUT_DISABLE_COMPILE_CACHE" => "1" }.merge(env))
        # A `bundle exec` parent leaves these behind; the app's own boot never has them.
        ENV.each_key { |k| full[k] = nil if k.start_with?("BUNDLER_ORIG_") }
        out, err, status = Open3.capture3(full, RbConfig.ruby, *args, chdir: app, pgroup: true)
        wait_for_group(status.pid)
        Subprocess::Result.new(out, err, status)
      end

      def boot!(app, lib, env: {}, ruby_opts: [])
        result = ruby_in(app, lib, *ruby_opts, "boot.rb", env: env)
        assert result.success?, "boot failed (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
        result
      end

      def loadout!(app, lib, *args, status: 0)
        result = ruby_in(app, lib, EXE, *args)
        assert_equal status, result.status.exitstatus, "loadout #{args.join(" ")}:\n#{result.stdout}\n#{result.stderr}"
        result
      end

      # `loadout check` for the load path alone.
      def check(app, lib, status:)
        loadout!(app, lib, "check", "--no-iseq", "--no-yaml", "--no-json", status: status).stdout
      end

      # The load_path line of a LOADOUT_STATS=1 report, as a Hash.
      def load_path_stats(stderr)
        line = stderr[/^  load_path: +(.*)$/, 1] or flunk("no load_path stats in:\n#{stderr}")
        line.split.to_h { |pair| pair.split("=", 2) }
      end

      def store_path(app)
        File.join(app, "tmp/cache/loadout/store")
      end
    end
  end
end

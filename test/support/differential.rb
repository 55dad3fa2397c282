# frozen_string_literal: true

require "rbconfig"
require "tmpdir"
require "support/subprocess"

module Loadout
  module TestSupport
    # Runs one script in two child Rubies, without and with loadout, and compares what a program
    # can observe: stdout, the exit status, each `check { ... }` step (return value, or exception
    # class, message and #path) and the $LOADED_FEATURES added after the prelude. Both children
    # `require "loadout"` (so both have loaded the same libraries); only the second runs +setup+.
    #
    #   assert_same_behaviour(<<~RUBY, setup: "Loadout::LoadPath.install!")
    #     $LOAD_PATH.unshift "#{dir}/a"
    #     check("a") { require "x" }
    #   RUBY
    #
    # Reusable for any cache: pass your own +setup+ (e.g. installing the compile cache).
    module Differential
      SUPPORT = File.expand_path("..", __dir__)
      DEFAULT_SETUP = "Loadout::LoadPath.install!"

      Report = Struct.new(:stdout, :status, :steps, :features, :stderr, :stats, keyword_init: true) do
        def comparable
          { stdout: stdout, status: status, steps: steps, features: features }
        end
      end

      # Both children load loadout's own files up front, so the comparison shows behaviour and
      # not loadout's dependencies (lib/loadout/scan.rb requires "set", which activates the set
      # default gem: a difference of its own, reported to its owner).
      PRELUDE = <<~'RUBY'
        require "loadout"
        require "loadout/scan"
        Loadout::LoadPath # loaded up front, like loadout/setup does: install! then loads nothing
        $__diff_steps = []
        def check(label = nil)
          value = yield
          $__diff_steps << [label, :ok, value.inspect]
          value
        rescue Exception => e # rubocop:disable Lint/RescueException
          path = e.respond_to?(:path) ? e.path : nil
          $__diff_steps << [label, :raise, e.class.name, e.message, path]
          nil
        end
        __diff_out = ENV.fetch("LOADOUT_DIFF_OUT")
        __diff_lib = ENV.fetch("LOADOUT_DIFF_LIB")
        at_exit do
          features = $LOADED_FEATURES.map { |f| f.dup.force_encoding(Encoding::BINARY) }
          features -= $__diff_base
          features.reject! { |f| f.start_with?(__diff_lib.b) }
          stats = Loadout.autoload?(:LoadPath) ? nil : Loadout::LoadPath.stats
          File.binwrite(__diff_out, Marshal.dump([$__diff_steps, features, stats]))
        end
      RUBY

      # Runs +script+ once; +setup+ nil means plain Ruby. Returns a Report.
      def run_reported(script, setup: nil, env: {}, chdir: nil, ruby_opts: [])
        Dir.mktmpdir("loadout-diff") do |tmp|
          out = File.join(tmp, "report")
          # The script is its own file, loaded after the prelude and setup, so its line numbers
          # (in backtraces, warnings, Thread#inspect) are the same in both runs.
          script_file = File.join(tmp, "script.rb")
          File.binwrite(script_file, script)
          # A copy: +PRELUDE would be PRELUDE itself where the heredoc is not frozen (JRuby).
          body = PRELUDE.dup
          body << "#{setup}\n" if setup
          body << "$__diff_base = $LOADED_FEATURES.map { |f| f.dup.force_encoding(Encoding::BINARY) }\n"
          body << "load #{script_file.dump}\n"
          file = File.join(tmp, "main.rb")
          File.binwrite(file, body)
          result = run_ruby("load #{file.dump}", env: env.merge("LOADOUT_DIFF_OUT" => out, "LOADOUT_DIFF_LIB" => "#{Subprocess::LIB}/loadout"),
                                                 chdir: chdir, ruby_opts: ruby_opts)
          steps, features, stats = File.exist?(out) ? Marshal.load(File.binread(out)) : [nil, nil, nil] # rubocop:disable Security/MarshalLoad
          Report.new(stdout: result.stdout, status: result.status.exitstatus, steps: steps, features: features,
                     stderr: result.stderr, stats: stats)
        end
      end

      # Proves the index really answered (a differential test alone also passes with loadout off).
      def assert_index_used(report, hits: 1, misses: 0)
        assert report.stats, "loadout was not installed in the child"
        assert_operator report.stats[:hits], :>=, hits, "index hits: #{report.stats.inspect}"
        assert_operator report.stats[:misses], :>=, misses, "index misses: #{report.stats.inspect}"
      end

      # Asserts the script behaves the same without and with loadout; returns [plain, with].
      # +before_each+ runs before each child (re-create files the script changes).
      # +sort_features+: compare $LOADED_FEATURES as a set (threads make the order vary).
      def assert_same_behaviour(script, setup: DEFAULT_SETUP, before_each: nil, stderr: false, sort_features: false,
                                **kw)
        before_each&.call
        plain = run_reported(script, **kw)
        before_each&.call
        with = run_reported(script, setup: setup, **kw)
        [plain, with].each { |r| r.features&.sort! } if sort_features
        assert plain.steps, "plain run wrote no report:\n#{plain.stdout}\n#{plain.stderr}"
        assert with.steps, "loadout run wrote no report:\n#{with.stdout}\n#{with.stderr}"
        assert_equal plain.comparable, with.comparable,
                     "behaviour differs with loadout\n--- plain stderr:\n#{plain.stderr}\n" \
                     "--- loadout stderr:\n#{with.stderr}"
        assert_equal plain.stderr, with.stderr if stderr
        [plain, with]
      end
    end
  end
end

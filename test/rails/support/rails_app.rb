# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require_relative "../generate_app"
require_relative "../../integration/app_helper"

module Loadout
  module TestSupport
    # Runs the Rails app of test/rails/generate_app.rb in child processes, three ways: without
    # loadout (:plain, LOADOUT_DISABLE=1), with it on an empty cache (:cold), and again once the
    # cold run (:warm), then compares what the runs printed and loaded.
    #
    #   with_rails_app do |app|
    #     assert_same_behaviour { |mode| run_rails(app, mode, "bin/rails", "runner", script("probe.rb")) }
    #   end
    #
    # RAILS_TEST_LOADOUT_ENV="VAR=value ..." adds variables to the loadout runs only (to see how far
    # they get with a part of loadout off, e.g. LOADOUT_DISABLE_LOAD_PATH_CACHE=1).
    module RailsApp
      include App # wait_for_group

      SCRIPTS = File.expand_path("../scripts", __dir__)
      LOADOUT_LIB = "#{RailsAppGenerator::REPO}/lib/".b
      MODES = %i[plain cold warm].freeze
      # The cache `require "loadout/setup"` uses by default, under the app root.
      CACHE = "tmp/cache/loadout"
      # LOADOUT_STATS=1 prints its report last on stderr.
      STATS_REPORT = /^loadout stats \(pid.*\z/m
      SAME = ->(output) { output }

      # One child process. +features+ (sorted, loadout's own files left out, the app's path as
      # "APP") and +constants+ come from scripts/report.rb; nil when the command does not run it.
      Run = Struct.new(:mode, :command, :stdout, :stderr, :status, :features, :constants, :seconds,
                       keyword_init: true) do
        def success?
          status.success?
        end

        def describe
          lines = stderr.lines
          shown = lines.size > 40 ? [*lines.first(25), "[... #{lines.size - 35} lines ...]\n", *lines.last(10)] : lines
          format("%s `%s` (%s, %.1f s); stderr:\n%s", mode, command, status, seconds, shown.join)
        end
      end

      def script(name)
        File.join(SCRIPTS, name)
      end

      # Yields the path of a private copy of the generated app (tests edit files, write databases,
      # and keep loadout's cache in the app's tmp/).
      def with_rails_app
        source = RailsAppGenerator.path
        with_files do |tmp|
          app = File.join(tmp, "app")
          FileUtils.cp_r(source, app, preserve: true)
          yield app
        end
      end

      # Runs +cmd+ with the app's Ruby in +app+. :cold empties loadout's cache first; every run
      # waits for its process group (App#wait_for_group). +loadout_env+: the loadout runs' only.
      def run_rails(app, mode, *cmd, env: {}, loadout_env: {}, stdin: "")
        raise ArgumentError, "mode: #{mode.inspect}" unless MODES.include?(mode)

        FileUtils.rm_rf(File.join(app, CACHE)) if mode == :cold
        report = File.join(app, "tmp/rails_probe.bin")
        FileUtils.rm_f(report)
        env = RailsAppGenerator.clean_env({ "RAILS_PROBE_OUT" => report }.merge(env))
        if mode == :plain
          env["LOADOUT_DISABLE"] = "1"
        else
          env.merge!(loadout_env)
          env.merge!(ENV.fetch("RAILS_TEST_LOADOUT_ENV", "").split.to_h { |pair| pair.split("=", 2) })
        end
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        out, err, status = Open3.capture3(env, RbConfig.ruby, *cmd, chdir: app, stdin_data: stdin, pgroup: true)
        wait_for_group(status.pid)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        data = File.exist?(report) ? Marshal.load(File.binread(report)) : {} # rubocop:disable Security/MarshalLoad
        Run.new(mode: mode, command: cmd.join(" "), stdout: out, stderr: err, status: status,
                features: app_features(data[:features], app), constants: app_constants(data[:constants]),
                seconds: seconds)
      end

      # Yields each mode (plain first); the block runs that mode's commands and returns its Run or
      # Runs. Asserts every plain run succeeded, then that each loadout run matches its plain twin:
      # stdout and stderr (less the LOADOUT_STATS report; each after +stdout+ / +stderr+, e.g. to
      # keep only a summary line or drop timings), exit status, features and constants. Every
      # difference of every run is reported, not only the first. Returns { mode => [Run, ...] }.
      def assert_same_behaviour(stdout: SAME, stderr: SAME)
        runs = MODES.to_h { |mode| [mode, [yield(mode)].flatten] }
        runs[:plain].each { |run| assert run.success?, "the run without loadout failed: #{run.describe}" }
        failures = %i[cold warm].flat_map do |mode|
          runs[:plain].zip(runs[mode]).filter_map do |plain, run|
            differences(plain, run, stdout: stdout, stderr: stderr)
          end
        end
        assert failures.empty?, failures.join("\n\n")
        runs
      end

      # What differs between a plain run and its loadout twin, as one message; nil when nothing.
      def differences(plain, run, stdout: SAME, stderr: SAME)
        aspects = {
          "stdout" => [stdout.call(plain.stdout), stdout.call(run.stdout)],
          "exit status" => [plain.status.exitstatus, run.status.exitstatus],
          "$LOADED_FEATURES" => [plain.features, run.features],
          "constants" => [plain.constants, run.constants],
          "stderr" => [stderr.call(plain.stderr), stderr.call(run.stderr.sub(STATS_REPORT, ""))]
        }
        found = aspects.filter_map do |name, (want, got)|
          next if want == got
          next "#{name}: no report (the run ended before its script wrote one)" if got.nil?

          # One entry a line, so the diff shows only the entries that differ.
          want, got = [want, got].map { |v| v.join("\n") } if want.is_a?(Array)
          "#{name}: #{short_diff(want, got)}"
        end
        return nil if found.empty?

        "#{run.mode} run with loadout differs from the run without it: #{run.describe}\n#{found.join("\n")}"
      end

      # A crash in every forked test worker can print thousands of lines: the diff's first 80.
      def short_diff(want, got, limit: 80)
        lines = diff(want, got).lines
        return lines.join if lines.size <= limit

        "#{lines.first(limit).join}[... #{lines.size - limit} more lines of diff]\n"
      end

      def app_features(features, app)
        return nil unless features

        root = "#{File.realpath(app)}/".b
        features.map(&:b).reject { |f| f.start_with?(LOADOUT_LIB) }.map { |f| f.sub(root, "APP/") }.sort
      end

      # loadout's own constants are loadout's business (the plain run has `Loadout` too: it
      # requires loadout/setup, which returns at once).
      def app_constants(names)
        names&.grep_v(/\ALoadout(::|\z)/)
      end

      # "hits=12" of the LOADOUT_STATS report line that starts with +label+ (e.g. "iseq:"), or nil.
      def stats_count(stderr, label, counter)
        line = stderr[STATS_REPORT]&.lines&.find { |l| l.strip.start_with?(label) }
        line && line[/\b#{counter}=(\d+)/, 1]&.to_i
      end
    end
  end
end

# frozen_string_literal: true

# Proves `require "loadout/rake"` invisible to Rake itself (bin/test runs this after the
# minitest suite; `bundle exec ruby test/rake/stock_suite.rb` runs it alone), for every rake the
# differential tests use (test/support/rake_project.rb: the bundle's, and Debian's 13.0.6, the
# rake of Ruby 3.1, with the FileTask shape before 13.1):
#
# 1. Rake's own test suite, run on that rake's lib/ and exe/ with loadout/rake loaded into every
#    Ruby process the suite starts (RUBYOPT): every test that passes without loadout must pass
#    with it.
# 2. A differential check: for every Rakefile rake's tests define (RakefileDefinitions), the output
#    and exit status of `rake -T`, `-P`, `-n` and `--trace`, with and without loadout/rake.
#
# The rake gem ships no tests, so they come from rake's source at the version's tag, taken at
# test time (never committed) into tmp/rake-suite/<version>/ (kept for later runs), from the first
# of: $LOADOUT_RAKE_SOURCE (a rake checkout or git dir), a git dir in $LOADOUT_RAKE_MIRRORS
# (":"-separated; default /work/.mirror/ruby+rake/repo), a clone of https://github.com/ruby/rake.
# Where none of those is reachable (a CI machine that only reaches package registries), the tests
# of Debian's rake source package (DEBIAN_SOURCE, the one version its mirror serves) are used:
# another version's tests on this version's code, so tests that fail without loadout too (a
# feature one version lacks) are set aside, as always, and the rest must pass with it. When
# nothing works it fails and says so; LOADOUT_SKIP_RAKE_SUITE=1 skips it on purpose.

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"
require_relative "../support/rake_project"

module Loadout
  module TestSupport
    module RakeStockSuite
      ROOT = File.expand_path("../..", __dir__)
      LOADOUT_LIB = File.join(ROOT, "lib")
      CACHE = File.join(ROOT, "tmp", "rake-suite")
      UPSTREAM = "https://github.com/ruby/rake"
      MIRRORS = ENV.fetch("LOADOUT_RAKE_MIRRORS", "/work/.mirror/ruby+rake/repo").split(":").reject(&:empty?)
      MODES = [["-T"], ["-P"], ["-n"], ["--trace"]].freeze
      # Debian 13's rake source (upstream tarball, tests included), served by the Debian mirror.
      DEBIAN_SOURCE = ["13.2.1", "http://deb.debian.org/debian/pool/main/r/rake/rake_13.2.1.orig.tar.gz"].freeze

      module_function

      def main
        if ENV["LOADOUT_SKIP_RAKE_SUITE"] == "1"
          puts "== rake's own suite: skipped (LOADOUT_SKIP_RAKE_SUITE=1)"
          return 0
        end

        ok = RakeProject.rake_libs.map do |lib|
          version = RakeProject.rake_version(lib)
          tree, tests = prepare(lib, version)
          next false unless tree

          label = tests == version ? "rake #{version}" : "rake #{version} (with rake #{tests}'s tests)"
          puts "== #{label}: its own test suite with loadout/rake in every process"
          suite_ok = run_suite(tree)
          puts "== #{label}: -T, -P, -n, --trace with and without loadout/rake, on rake's test Rakefiles"
          differential(tree) && suite_ok
        end
        ok.all? ? 0 : 1
      end

      # tmp/rake-suite/<version>/: lib/ and exe/ of the rake at +lib+, test/ from rake's source at
      # that version or else Debian's. Returns [tree, version of the tests] or nil.
      def prepare(lib, version)
        tree = File.join(CACHE, version)
        tests_file = File.join(tree, "TESTS_VERSION")
        unless File.file?(tests_file)
          FileUtils.rm_rf(tree)
          FileUtils.mkdir_p(tree)
          tests = version if fetch_tests(version, tree)
          unless tests
            warn "rake's test suite for #{version} is unavailable (set LOADOUT_RAKE_SOURCE to a checkout of " \
                 "#{UPSTREAM} or a git dir holding tag v#{version}); using Debian's rake #{DEBIAN_SOURCE.first}'s"
            debian = debian_tree
            unless debian
              FileUtils.rm_rf(tree)
              return nil
            end
            FileUtils.cp_r(File.join(debian, "test"), tree)
            tests = DEBIAN_SOURCE.first
          end
          File.write(tests_file, tests)
        end
        %w[lib exe].each do |dir|
          FileUtils.rm_rf(File.join(tree, dir))
          FileUtils.cp_r(File.join(File.dirname(lib), dir), File.join(tree, dir))
        end
        [tree, File.read(tests_file)]
      end

      # tmp/rake-suite/debian-<version>/: Debian's rake source tarball unpacked, or nil with a
      # message.
      def debian_tree
        version, url = DEBIAN_SOURCE
        tree = File.join(CACHE, "debian-#{version}")
        return tree if File.directory?(File.join(tree, "test"))

        FileUtils.rm_rf(tree)
        FileUtils.mkdir_p(tree)
        tarball = File.join(CACHE, File.basename(url))
        problem = download(url, tarball)
        unless problem
          out, status = Open3.capture2e("tar", "-xzf", tarball, "-C", tree, "--strip-components=1")
          return tree if status.success? && File.directory?(File.join(tree, "test"))

          problem = "tar: #{out.strip}"
        end
        warn "rake's test suite is unavailable: neither rake's source nor #{url} could be had (#{problem}); " \
             "set LOADOUT_RAKE_SOURCE, or LOADOUT_SKIP_RAKE_SUITE=1 to skip it"
        FileUtils.rm_rf(tree)
        nil
      end

      # Downloads +url+ to +path+ with Ruby's own Net::HTTP (no curl: the Debian 13 roots have
      # none), three tries. Returns nil, or why not.
      def download(url, path)
        require "net/http"
        problem = nil
        3.times do
          response = Net::HTTP.get_response(URI(url))
          return File.binwrite(path, response.body) && nil if response.is_a?(Net::HTTPSuccess)

          problem = "HTTP #{response.code}"
        rescue StandardError => e
          problem = "#{e.class}: #{e.message}"
        end
        problem
      end

      def fetch_tests(version, tree)
        sources = [ENV["LOADOUT_RAKE_SOURCE"], *MIRRORS].compact.reject(&:empty?)
        sources.each do |src|
          next unless File.directory?(src)
          return true if archive_tests(src, version, tree)

          # A plain checkout (no git): use it when it is the same version.
          if RakeProject.rake_version(File.join(src, "lib")) == version
            FileUtils.cp_r(File.join(src, "test"), tree)
            return true
          end
        rescue SystemCallError
          next
        end
        clone = File.join(CACHE, "src-#{version}")
        _, status = Open3.capture2e("git", "clone", "-q", "--depth", "1", "--branch", "v#{version}", UPSTREAM, clone)
        return false unless status.success?

        FileUtils.cp_r(File.join(clone, "test"), tree)
        true
      end

      def archive_tests(git_dir, version, tree)
        archive, status = Open3.capture2("git", "--git-dir", git_dir_of(git_dir), "archive", "v#{version}", "test",
                                         binmode: true)
        return false unless status.success?

        _, status = Open3.capture2("tar", "-x", "-C", tree, stdin_data: archive, binmode: true)
        status.success?
      end

      def git_dir_of(dir)
        File.directory?(File.join(dir, ".git")) ? File.join(dir, ".git") : dir
      end

      # An environment free of the bundle (rake's suite uses test-unit, which the bundle lacks).
      def clean_env(extra = {})
        keys = ENV.keys.grep(/\A(BUNDLE_|BUNDLER_|RUBYOPT\z|RUBYLIB\z|GEM_HOME\z|GEM_PATH\z|LOADOUT_)/)
        keys.to_h { |k| [k, nil] }.merge(extra)
      end

      def loadout_env(tree)
        clean_env("RUBYOPT" => "-I#{File.join(tree, "lib")} -I#{LOADOUT_LIB} -rloadout/rake")
      end

      # [failed test names, summary line, output]
      def suite(tree, env, files = nil)
        files ||= Dir.glob("test/test_*.rb", base: tree).sort
        out, = Open3.capture2e(env, RbConfig.ruby, "-Ilib", "-Itest", "-e",
                               "ARGV.each { |f| require File.expand_path(f) }", *files, chdir: tree)
        # test-unit (rake 13.1 and later) prints "Failure: name(Class)", minitest "1) Failure:\nClass#name".
        failed = out.scan(/^(?:Failure|Error): (\S+\(\w+\))/).flatten +
                 out.scan(/^ *\d+\) (?:Failure|Error):\n(\w+)#(\w+[?!]?)/).map { |klass, name| "#{name}(#{klass})" }
        failed = failed.uniq.sort
        summary = out[/^\d+ (?:tests|runs), .*$/]
        [failed, summary, out]
      end

      def run_suite(tree)
        failed, summary, out = suite(tree, loadout_env(tree))
        unless summary
          puts out
          puts "rake's suite did not finish under loadout/rake"
          return false
        end
        puts "   with loadout/rake: #{summary}"
        return true if failed.empty?

        # Tests that fail without loadout too say nothing about it.
        files = failed.map { |t| t[/\((\w+)\)/, 1] }.uniq.filter_map { |klass| test_file_of(tree, klass) }
        stock_failed, stock_summary, = suite(tree, clean_env, files)
        puts "   without it (the files that failed): #{stock_summary}"
        shared = failed & stock_failed
        puts "   set aside, failing without loadout/rake too: #{shared.join(", ")}" unless shared.empty?
        ours = failed - stock_failed
        return true if ours.empty?

        puts out
        puts "   FAILED only with loadout/rake: #{ours.join(", ")}"
        false
      end

      def test_file_of(tree, klass)
        Dir.glob("test/test_*.rb", base: tree).find { |f| File.read(File.join(tree, f)).include?("class #{klass} ") }
      end

      # Writes each of rake's test Rakefiles into a fresh dir, runs rake there with and without
      # loadout/rake, and compares what it printed and its exit status.
      def differential(tree)
        definitions = load_definitions(tree)
        mismatches = []
        runs = 0
        definitions.instance_methods(false).grep(/\Arakefile_/).sort.each do |name|
          MODES.each do |args|
            stock = rake_outcome(tree, definitions, name, args, clean_env)
            ours = rake_outcome(tree, definitions, name, args, loadout_env(tree))
            runs += 1
            mismatches << [name, args, stock, ours] unless stock == ours
          end
        end
        puts "   #{runs} rake runs compared, #{mismatches.size} differ"
        mismatches.each do |name, args, stock, ours|
          puts "   DIFFERS: #{name} rake #{args.join(" ")}\n" \
               "     stock:   #{stock.inspect}\n     loadout: #{ours.inspect}"
        end
        mismatches.empty?
      end

      def load_definitions(tree)
        require "fileutils"
        mod = Module.new
        mod.module_eval(File.read(File.join(tree, "test/support/rakefile_definitions.rb")), "rakefile_definitions.rb")
        defs = mod.const_get(:RakefileDefinitions)
        defs.const_set(:RUBY, RbConfig.ruby) # Rake::TestCase::RUBY, which some definitions name
        defs.module_eval do
          def rakefile(contents)
            File.write("Rakefile", contents)
          end
        end
        defs
      end

      def rake_outcome(tree, definitions, name, args, env)
        Dir.mktmpdir("loadout-rake-diff") do |dir|
          Dir.chdir(dir) { Object.new.extend(definitions).public_send(name) }
          out, err, status = Open3.capture3(env, RbConfig.ruby, "-I#{File.join(tree, "lib")}",
                                            File.join(tree, "exe", "rake"), *args, chdir: dir)
          # loadout's frames show in --trace backtraces between rake's (hidden without --trace).
          err = err.lines.reject { |l| l.include?("#{LOADOUT_LIB}/loadout/rake") }.join
          [normalize(out, dir), normalize(err, dir), status.exitstatus]
        end
      end

      # The temp dir, and what the test runner a test-task Rakefile starts prints differently
      # on every run (its random seed and timings).
      def normalize(text, dir)
        text.gsub(dir, "<dir>").gsub(/--seed \d+/, "--seed N").gsub(/^Finished in .*$/, "Finished in T")
      end
    end
  end
end

exit Loadout::TestSupport::RakeStockSuite.main if $PROGRAM_NAME == __FILE__

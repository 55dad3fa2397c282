# frozen_string_literal: true

require "test_helper"
require "support/differential"

# The front hook (LoadPath::RubyGemsFront): without Bundler, RubyGems' Kernel#require stays in
# place and loadout answers above it where RubyGems would only pass the name on. Everything
# RubyGems does must stay exactly as without loadout: default-gem activation (and the "-I beats a
# default gem" walk that decides it), gem activation on a LoadError, unresolved dependencies,
# another version of a default gem, a LoadError the file raises for its own name. The children
# run without Bundler (RUBYOPT and BUNDLE_* cleared), with 40 empty directories unshifted onto
# $LOAD_PATH ahead of RubyGems' insert index, as apps that put lib dirs there themselves have.
class RequireRubyGemsFrontTest < Minitest::Test
  include Loadout::TestSupport::Differential
  include Loadout::TestSupport::Subprocess

  NO_BUNDLER = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil, "BUNDLER_SETUP" => nil, "BUNDLE_BIN_PATH" => nil }.freeze

  # +dirs+ (relative to the tree) go to the front of $LOAD_PATH, after 40 empty ones.
  def prelude(dir, *dirs)
    empty = Array.new(40) { |i| "#{dir}/empty/#{i}" }
    "#{empty.map { |d| "Dir.mkdir(#{d.dump}) rescue nil\n" }.join}" \
      "$LOAD_PATH.unshift(#{(dirs.map { |d| "#{dir}/#{d}" } + empty).map(&:dump).join(", ")})\n"
  end

  REPORT = <<~'RUBY'
    check(:loaded_specs) { Gem.loaded_specs.keys.sort }
  RUBY

  def same_without_bundler(script, env: {}, **kw)
    assert_same_behaviour(script, env: NO_BUNDLER.merge(env), **kw)
  end

  def front(report)
    assert report.stats, "loadout was not installed in the child"
    report.stats.slice(:front, :rubygems, :gem_walks, :hits, :already_loaded)
  end

  test "loaded features and index hits are answered above RubyGems" do
    with_files([["lib/fa.rb", "require 'fb'; $order << :a\n"], ["lib/fb.rb", "$order << :b\n"]]) do |dir|
      _, with = same_without_bundler(<<~RUBY)
        #{prelude(dir, "lib")}
        $order = []
        check(:a) { require "fa" }
        check(:again) { require "fa" }
        check(:b) { require "fb.rb" }
        check(:order) { $order }
        #{REPORT}
      RUBY
      stats = front(with)
      assert_operator stats[:front].to_i, :>=, 4, stats.inspect # fa, fb, fa again, fb.rb
      assert_operator stats[:already_loaded], :>=, 2, stats.inspect
    end
  end

  test "a require of a loaded feature allocates nothing above RubyGems" do
    with_files([["lib/fa.rb", "1\n"]]) do |dir|
      script = <<~RUBY
        #{prelude(dir, "lib")}
        require "fa"
        feature = "fa".freeze
        before = GC.stat(:total_allocated_objects)
        1000.times { require feature }
        $stdout.puts "allocated=\#{GC.stat(:total_allocated_objects) - before}"
      RUBY
      counts = [nil, DEFAULT_SETUP].map do |setup|
        report = run_reported(script, setup: setup, env: NO_BUNDLER)
        report.stdout[/allocated=(\d+)/, 1]&.to_i or flunk("no count:\n#{report.stdout}\n#{report.stderr}")
      end
      # The front answers before RubyGems runs: no allocation (RubyGems 3.3's require, Ruby 3.1's,
      # allocates one per call, which the lower hook alone left in place: 1,002 here). The Ruby
      # twin's "maybe loaded?" check allocates a few objects per call, then Ruby decides (through
      # RubyGems and the twin's lower hook that was 16 per call).
      assert_operator counts[1], :<, Loadout::BACKEND == :native ? 50 : 10_000, counts.inspect
      assert_operator counts[1], :<=, counts[0], counts.inspect if Loadout::BACKEND == :native
    end
  end

  test "default gems are activated as RubyGems does, behind a long $LOAD_PATH" do
    with_files([["lib/mine.rb", "1\n"]]) do |dir|
      _, with = same_without_bundler(<<~RUBY)
        #{prelude(dir, "lib")}
        check(:securerandom) { require "securerandom" }
        check(:json) { require "json" }
        check(:json_sub) { require "json/add/core" }
        check(:digest) { require "digest" }
        check(:again) { require "securerandom" }
        check(:mine) { require "mine" }
        #{REPORT}
      RUBY
      stats = front(with)
      assert_operator stats[:gem_walks].to_i, :>=, 3, stats.inspect
      assert_includes with.steps.assoc(:loaded_specs)[2], "securerandom"
    end
  end

  test "-I beats a default gem: a .rb, a bare file, a symlinked item, a relative item" do
    # (weakref: a default gem from Ruby 3.1 to 4.0, loaded by nothing before the script; set is
    # core from 4.0, already provided.)
    files = [["shadow/weakref.rb", "puts 'my weakref'\n"], ["bare/ostruct", "not ruby\n"],
             ["real/securerandom.rb", "puts 'my sr'\n"], ["rel/digest.rb", "puts 'my digest'\n"]]
    with_files(files) do |dir|
      File.symlink("#{dir}/real", "#{dir}/linked")
      _, with = same_without_bundler(<<~RUBY, chdir: dir)
        #{prelude(dir, "shadow", "bare", "linked")}
        $LOAD_PATH.unshift("rel")
        check(:weakref) { require "weakref" }
        check(:weakref_again) { require "weakref" }
        check(:ostruct) { require "ostruct" }
        check(:securerandom) { require "securerandom" }
        check(:digest) { require "digest" }
        #{REPORT}
      RUBY
      assert_equal "my weakref\nmy sr\nmy digest\n", with.stdout
      front(with) # installed
    end
  end

  test "a default gem whose name no item ahead holds, with an unlisted item ahead: RubyGems decides" do
    with_files([["locked/x.rb", "1\n"]]) do |dir|
      File.chmod(0o000, "#{dir}/locked")
      _, with = same_without_bundler(<<~RUBY)
        #{prelude(dir, "locked")}
        check(:tsort) { require "tsort" }
        #{REPORT}
      RUBY
      assert_includes with.steps.assoc(:loaded_specs)[2], "tsort"
    ensure
      File.chmod(0o755, "#{dir}/locked")
    end
  end

  def gem_files(name, version, files, deps: {})
    dep_lines = deps.map { |n, req| "s.add_runtime_dependency #{n.dump}, #{req.dump}" }.join("\n")
    spec = <<~RUBY
      Gem::Specification.new do |s|
        s.name = #{name.dump}
        s.version = #{version.dump}
        s.summary = "test gem"
        s.authors = ["loadout"]
        s.files = #{files.map(&:first).inspect}
        s.require_paths = ["lib"]
        #{dep_lines}
      end
    RUBY
    [["specifications/#{name}-#{version}.gemspec", spec]] +
      files.map { |path, body| ["gems/#{name}-#{version}/#{path}", body] }
  end

  test "gem activation on a LoadError, unresolved dependencies and another version of a default gem" do
    home_files = gem_files("omega", "1.0", [["lib/omega.rb", "puts 'omega'"]]) +
                 gem_files("psi", "1.0", [["lib/psi.rb", "puts 'psi'; require 'omega'"]], deps: { "omega" => ">= 1" }) +
                 gem_files("weakref", "99.0", [["lib/weakref.rb", "puts 'weakref 99'"]]) # (set is core from 4.0)
    with_files(home_files) do |home|
      with_files([["lib/local.rb", "1\n"]]) do |dir|
        env = { "GEM_HOME" => home, "GEM_PATH" => "#{home}:#{Gem.default_dir}" }
        _, with = same_without_bundler(<<~RUBY, env: env)
          #{prelude(dir, "lib")}
          check(:local) { require "local" }
          check(:omega) { require "omega" }
          check(:gem_psi) { gem "psi" }
          check(:psi) { require "psi" }
          check(:gem_weakref) { gem "weakref", "99.0" }
          check(:weakref) { require "weakref" }
          check(:local_again) { require "local" }
          check(:nowhere) { require "nowhere_at_all" }
          #{REPORT}
        RUBY
        assert_equal "omega\npsi\nweakref 99\n", with.stdout
        front(with)
      end
    end
  end

  test "a LoadError the file raises for its own name makes RubyGems try a gem, as without loadout" do
    home_files = gem_files("zeta", "1.0", [["lib/zeta.rb", "puts 'zeta from the gem'"]])
    raiser = "puts 'local zeta'\ne = LoadError.new('cannot load such file -- zeta')\n" \
             "e.instance_variable_set(:@path, 'zeta')\nraise e\n"
    with_files(home_files) do |home|
      with_files([["lib/zeta.rb", raiser]]) do |dir|
        env = { "GEM_HOME" => home, "GEM_PATH" => "#{home}:#{Gem.default_dir}" }
        _, with = same_without_bundler(<<~RUBY, env: env)
          #{prelude(dir, "lib")}
          check(:zeta) { require "zeta" }
          #{REPORT}
        RUBY
        # activated, the gem comes after lib/ on $LOAD_PATH: Ruby finds the local file again
        assert_equal "local zeta\nlocal zeta\n", with.stdout
        assert_equal "LoadError", with.steps.assoc(:zeta)[2]
        assert_operator front(with)[:front].to_i, :>=, 1, with.stats.inspect
      end
    end
  end

  test "threads requiring the same feature at once" do
    with_files([["lib/slow.rb", "sleep 0.05; $count = ($count || 0) + 1\n"]]) do |dir|
      same_without_bundler(<<~RUBY)
        #{prelude(dir, "lib")}
        check(:threads) { Array.new(8) { Thread.new { require "slow" } }.map(&:value).sort_by(&:to_s) }
        check(:count) { $count }
      RUBY
    end
  end

  test "a circular require warns as without loadout (-w)" do
    with_files([["a/circ_a.rb", "require 'circ_b'"], ["a/circ_b.rb", "p require('circ_a')"]]) do |dir|
      plain, with = same_without_bundler("#{prelude(dir, "a")}\ncheck(:c) { require 'circ_a' }\n", ruby_opts: ["-w"])
      warning = /loading in progress, circular require considered harmful/
      assert_equal plain.stderr.scan(warning).size, with.stderr.scan(warning).size, with.stderr
      assert_operator with.stderr.scan(warning).size, :>=, 1
    end
  end

  test "the front stays out under Bundler, and when gem_original_require was decorated before setup" do
    with_files([["lib/fa.rb", "1\n"]]) do |dir|
      script = "#{prelude(dir, "lib")}\ncheck(:a) { require 'fa' }\n"
      # The suite's bundle: bundler/setup removed RubyGems' require (Bundler < 2.5), or kept it
      # with gem discovery off (2.5+): the front takes its place only then. Where Bundler's
      # bundled-gems block is Kernel#require (Ruby 3.3+), that block calls Ruby's C require
      # (Kernel.no_warning_require), not RubyGems': the lower hook answers, not the front.
      _, bundled = assert_same_behaviour(script)
      kept = run_ruby!('require "bundler/setup"; print Kernel.instance_method(:require).source_location.to_s').stdout
      if kept.include?("kernel_require")
        assert_operator bundled.stats[:front].to_i, :>, 0, bundled.stats.inspect
      else
        assert_nil bundled.stats[:front], bundled.stats.inspect
      end

      decorated = <<~RUBY
        module Kernel
          alias __deco_gor gem_original_require
          def gem_original_require(path)
            ($log ||= []) << path
            __deco_gor(path)
          end
          private :gem_original_require
        end
        Loadout::LoadPath.install! if $__with_loadout
        #{script}
        check(:log) { $log }
      RUBY
      _, with = same_without_bundler(decorated, setup: "$__with_loadout = true")
      assert_nil with.stats[:front], with.stats.inspect
      assert_equal ["fa"].inspect, with.steps.assoc(:log)[2]
    end
  end

  # How many times Bundler's warning? runs for four requires of lib/fa.rb and fa.rb's own of set
  # (names it cannot warn about) under bundler/setup with loadout installed.
  def warning_calls(dir, env)
    probe = <<~RUBY
      require "loadout"
      require "bundler/setup"
      Loadout::LoadPath.install!
      $LOAD_PATH.unshift(#{"#{dir}/lib".dump})
      calls = 0
      trace = TracePoint.new(:call) { |tp| calls += 1 if tp.method_id == :warning? }
      trace.enable { require "fa"; 2.times { require "fa" }; Kernel.require "fa" }
      print calls
    RUBY
    Integer(run_ruby!(probe, env: env).stdout)
  end

  # Bundler 2.5+ (Ruby 3.3+) keeps RubyGems' require with gem discovery off and decorates require
  # with its bundled-gems warning (Gem::BUNDLED_GEMS.replace_require): loadout then answers above
  # that decoration too (LoadPath::BundledGemsFront, Ruby 3.4+), for names it cannot warn about. The children
  # use Ruby's own Bundler on an app with an empty bundle.
  test "Bundler's bundled-gems warning: the same warnings and LoadErrors, the rest answered above it" do
    unbundled = ENV.keys.grep(/\ABUNDLE/).to_h { |k| [k, nil] }
                   .merge(NO_BUNDLER, "GEM_HOME" => nil, "RUBYLIB" => nil, "GEM_PATH" => nil)
    bundler = run_ruby!('print Gem::Specification.default_stubs.find { |s| s.name == "bundler" }&.version',
                        env: unbundled).stdout
    skip "Bundler's bundled-gems warning comes with Ruby 3.3" unless RUBY_VERSION >= "3.3" && !bundler.empty?

    lock = "GEM\n  remote: https://rubygems.org/\n  specs:\n\nPLATFORMS\n  ruby\n\nDEPENDENCIES\n\n" \
           "BUNDLED WITH\n   #{bundler}\n"
    with_files([["app/Gemfile", "source \"https://rubygems.org\"\n"], ["app/Gemfile.lock", lock],
                ["lib/fa.rb", "require 'set'\n"], ["lib/smtp.rb", "puts 'my smtp'\n"]]) do |dir|
      # Nothing of the suite's bundle (BUNDLER_VERSION and RUBYLIB would pick its older Bundler).
      env = ENV.keys.grep(/\ABUNDLE/).to_h { |k| [k, nil] }
               .merge(NO_BUNDLER, "GEM_HOME" => nil, "GEM_PATH" => nil, "RUBYLIB" => nil)
               .merge("BUNDLE_GEMFILE" => "#{dir}/app/Gemfile")
      script = <<~RUBY
        #{prelude(dir, "lib")}
        check(:chain) { Kernel.instance_method(:require).owner }
        check(:a) { require "fa" }
        check(:again) { 3.times.map { require "fa" } }
        %w[csv base64 net/smtp kconv smtp].each { |f| check(f) { require f } }
        check(:singleton) { Kernel.require "fa" }
      RUBY
      setup = "require 'bundler/setup'; Loadout::LoadPath.install! if $__with_loadout"
      plain, with = assert_same_behaviour("#{setup}\n#{script}", setup: "$__with_loadout = true", env: env)
      scrub = ->(text) { text.gsub(/loadout-diff[\w-]+/, "TMP") } # each child's script has its own dir
      assert_equal scrub.(plain.stderr), scrub.(with.stderr)
      # (base64: Debian's Ruby 3.3 finds csv in vendor_ruby, its ruby-csv package, and Ruby 3.3's
      # warning? warns about no file outside Ruby's lib dir; base64 warns on 3.3, 3.4 and 4.0.)
      assert_match(/base64 (was|used to be) loaded from the standard library/, with.stderr) # (4.0: "used to be")
      # Answered above Bundler's block: warning? never runs for a name it cannot warn about (the
      # Ruby twin leaves Bundler's block in place, and so does Ruby 3.3, whose warning? counts
      # frames: BundledGemsFront.supported?).
      above = Loadout::BACKEND == :native && RUBY_VERSION >= "3.4"
      assert_equal above ? 0 : 5, warning_calls(dir, env), "calls of Gem::BUNDLED_GEMS.warning? for fa and its set"
    end
  end
end

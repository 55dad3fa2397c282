# frozen_string_literal: true

require "test_helper"
require "support/differential"

# Every way programs decorate require, installed before and after loadout's setup: each
# decorator must see the calls it sees without loadout, with the same arguments (autoloads
# included), call what it wrapped successfully, and the program must load the same files.
class RequireDecoratorsTest < Minitest::Test
  include Loadout::TestSupport::Differential

  module Bench
    # bootsnap and msgpack from the suite's bundle, for a child that runs without Bundler.
    def self.gem_paths_for_test
      %w[bootsnap msgpack].flat_map { |g| Gem.loaded_specs.fetch(g).full_require_paths }
    end
  end

  FILES = [["lib/deco_a.rb", "require 'deco_b'; $order << :a\n"], ["lib/deco_b.rb", "$order << :b\n"],
           ["lib/deco_auto.rb", "module DecoAuto; end\n"], ["lib/deco_k.rb", "$order << :k\n"],
           ["lib/deco/nested.rb", "$order << :nested\n"]].freeze

  # What each decorator logs, and the calls made through it.
  BODY = <<~'RUBY'
    $order = []
    autoload :DecoAuto, "deco_auto"
    check(:require) { require "deco_a" }
    check(:again) { require "deco_a" }
    check(:kernel_require) { Kernel.require "deco_k" }
    check(:send) { Object.new.send(:require, "deco/nested") }
    check(:autoload) { DecoAuto.name }
    check(:miss) { require "deco_nowhere" }
    check(:absolute) { require "DIR/lib/deco_b.rb" }
    check(:order) { $order }
    check(:log) { $log }
  RUBY

  STYLES = {
    alias_chain: <<~'RUBY',
      module Kernel
        alias old_require require
        def require(path)
          ($log ||= []) << [:alias, path]
          old_require(path)
        end
        private :require
      end
    RUBY
    alias_method_define_method: <<~'RUBY',
      Kernel.module_eval { alias_method :deco_original_require, :require }
      Kernel.send(:define_method, :require) do |path|
        ($log ||= []) << [:define_method, path]
        deco_original_require(path)
      end
      Kernel.send(:private, :require)
    RUBY
    prepended_module: <<~'RUBY',
      Kernel.prepend(Module.new do
        def require(path)
          ($log ||= []) << [:prepend, path]
          super
        end
      end)
    RUBY
    kernel_singleton: <<~'RUBY',
      class << Kernel
        alias_method :deco_k_original, :require
        def require(path)
          ($log ||= []) << [:singleton, path]
          deco_k_original(path)
        end
      end
    RUBY
    unbound_method: <<~'RUBY',
      original = Kernel.instance_method(:require)
      Kernel.send(:define_method, :require) do |path|
        ($log ||= []) << [:unbound, path]
        original.bind_call(self, path)
      end
      Kernel.send(:private, :require)
    RUBY
  }.freeze

  # RubyGems' Kernel#require stays in place without Bundler: loadout then also answers above it
  # (LoadPath::RubyGemsFront), and each decorator must still see what it sees without loadout.
  NO_BUNDLER = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil, "BUNDLER_SETUP" => nil, "BUNDLE_BIN_PATH" => nil }.freeze

  def check_style(decorator, order, env: {})
    with_files(FILES) do |dir|
      prelude = "$LOAD_PATH.unshift(#{"#{dir}/lib".dump})\n"
      script = if order == :before # the decorator first, then loadout (if on)
                 "#{prelude}#{decorator}Loadout::LoadPath.install! if $__with_loadout\n#{BODY}"
               else
                 "#{prelude}#{decorator}#{BODY}"
               end
      setup = order == :before ? "$__with_loadout = true" : "Loadout::LoadPath.install!"
      _, with = assert_same_behaviour(script.gsub("DIR", dir), setup: setup, env: env)
      # An UnboundMethod of Ruby's require taken before setup keeps calling Ruby's require (not
      # accelerated, not changed); Kernel.require still goes through the index.
      bypassed = decorator.include?("instance_method(:require)") && order == :before
      assert_index_used(with, hits: 1, misses: bypassed ? 0 : 1)
      with
    end
  end

  STYLES.each do |name, decorator|
    test "#{name} installed after loadout" do
      check_style(decorator, :after)
    end

    test "#{name} installed before loadout" do
      check_style(decorator, :before)
    end

    %i[before after].each do |order|
      test "#{name} installed #{order} loadout, RubyGems' require in place (no Bundler)" do
        with = check_style(decorator, order, env: NO_BUNDLER)
        # The front answers under a decorator installed before it too (it replaced RubyGems'
        # entry, which the decorator wraps), except where the decorator holds RubyGems' require
        # as an UnboundMethod taken before setup.
        held = decorator.include?("instance_method(:require)") && order == :before
        assert_operator with.stats[:front].to_i, held ? :== : :>, 0, with.stats.inspect
      end
    end
  end

  # Bootsnap's load-path cache decorates Kernel#require with an alias chain and hands the next
  # method an absolute path: loadout then passes it to Ruby untouched.
  %i[before after].each do |order|
    test "Bootsnap's require decoration, installed #{order} loadout" do
      with_files(FILES) do |dir|
        paths = Bench.gem_paths_for_test
        bootsnap = <<~RUBY
          #{paths.map { |p| "$LOAD_PATH.unshift(#{p.dump})" }.join("\n")}
          require "bootsnap"
          Bootsnap.setup(cache_dir: #{"#{dir}/bs".dump}, load_path_cache: true, compile_cache_iseq: false,
                         compile_cache_yaml: false, compile_cache_json: false)
        RUBY
        prelude = "$LOAD_PATH.unshift(#{"#{dir}/lib".dump})\n"
        install = order == :before ? "Loadout::LoadPath.install! if $__with_loadout\n" : ""
        script = "#{prelude}#{bootsnap}#{install}#{BODY}"
        setup = order == :before ? "$__with_loadout = true" : "Loadout::LoadPath.install!"
        assert_same_behaviour(script.gsub("DIR", dir).sub("check(:log) { $log }", "check(:log) { nil }"), setup: setup)
      end
    end
  end

  # Under the suite's bundle and without Bundler: Kernel#require is Ruby's C require under Bundler
  # 2.3 (the lock's, Ruby 3.1 and 3.3), Bundler's bundled-gems block under Bundler 4 (the 3.4 and
  # 4.0 roots' own), RubyGems' require without Bundler.
  [["under the suite's bundle", {}], ["without Bundler", NO_BUNDLER]].each do |label, env|
    test "a decorator taken after setup calls loadout's hook; " \
         "before setup, the hook replaces what it wraps (#{label})" do
      with_files(FILES) do |dir|
        out = run_ruby!(<<~RUBY, env: env).stdout
          require "loadout"
          $order = []
          $LOAD_PATH.unshift(#{"#{dir}/lib".dump})
          module Kernel; alias_method :early_alias, :require; end
          k = Kernel
          p k.instance_method(:require).source_location
          Loadout::LoadPath.install!
          module Kernel; alias_method :late_alias, :require; end
          p [k.instance_method(:early_alias).source_location, k.instance_method(:late_alias).source_location]
          require "deco_a"; early_alias "deco_k"; late_alias "deco/nested"
          p Loadout::LoadPath.stats[:hits]
        RUBY
        lines = out.lines.map(&:chomp)
        if lines[0].include?("/bundled_gems.rb")
          # Bundler's block, taken before setup, stays (loadout replaces it under its own name
          # only, and the twin not at all) and calls loadout's hook below it.
          late = Loadout::BACKEND == :native ? "nil" : lines[0]
          assert_equal "[#{lines[0]}, #{late}]", lines[1], "Bundler's block, then the hook"
        elsif Loadout::BACKEND == :native
          assert_equal "[nil, nil]", lines[1], "both are C functions: Ruby's frames, no loadout frame"
        else
          twin = lines[0].include?("kernel_require") ? "rubygems_front.rb" : "require_hook.rb"
          assert_equal 2, lines[1].scan("/loadout/load_path/#{twin}").size, "the twin is a Ruby method: #{lines[1]}"
        end
        assert_equal "4", lines[2], "deco_a, deco_b, deco_k and deco/nested all went through the index"
      end
    end
  end
  # Both Kernel scans (RequireHook.targets, RubyGemsFront.targets) ask Native.method_arity first
  # and make an UnboundMethod only for entries that take one argument. They must find exactly
  # what the full scan finds: C require and RubyGems' require under other names, public and
  # private, on Kernel and its singleton class, with and without a module prepended to Kernel.
  [["under the suite's bundle", {}], ["without Bundler", NO_BUNDLER]].each do |label, env|
    test "the Kernel scans find what a scan of every entry finds, with few objects (#{label})" do
      out = run_ruby!(<<~'RUBY', env: env).stdout
        require "loadout"
        hook = Loadout::LoadPath::RequireHook
        front = Loadout::LoadPath::RubyGemsFront
        scan = -> { [hook.targets, front.targets.map { |t| t.first(3) }] }
        c_require = Kernel.private_method_defined?(:gem_original_require) ? :gem_original_require : :require
        module Kernel; def two(a, b) = nil; def one(a) = nil; end # (arity 1, not a require)
        Kernel.send(:alias_method, :deco_c_require, c_require)
        Kernel.send(:alias_method, :deco_public_require, :require)
        Kernel.send(:public, :deco_public_require)
        # (Bundler on Ruby 3.3+ keeps the C Kernel.require as no_warning_require, behind its own.)
        s_require = Kernel.singleton_class.method_defined?(:no_warning_require) ? :no_warning_require : :require
        Kernel.singleton_class.send(:alias_method, :deco_s_require, s_require)
        Kernel.singleton_class.send(:private, :deco_s_require)
        $full = false
        hook.singleton_class.prepend(Module.new { def direct?(mod) = $full ? false : super })
        results = []
        2.times do |round|
          Kernel.prepend(Module.new { def require(*args) = super(*args) }) if round == 1 # (arity -1)
          counted = lambda do |full|
            $full = full
            scan.call
            before = GC.stat(:total_allocated_objects)
            found = scan.call
            [found, GC.stat(:total_allocated_objects) - before]
          end
          (fast, made), (full, made_full) = counted.call(false), counted.call(true)
          results << [fast == full, fast.inspect, made, made_full]
        end
        p results
      RUBY
      results = eval(out.lines.last) # rubocop:disable Security/Eval
      results.each_with_index do |(same, found, made, made_full), round|
        assert same, "round #{round}: #{found}"
        %w[deco_c_require deco_s_require].each { |name| assert_includes found, name, "round #{round}" }
        if found.include?("kernel_require") || label == "without Bundler"
          assert_includes found, ":deco_public_require, true", "RubyGems' require under another name"
        end
        refute_includes found, ":one,"
        # Natively, with nothing prepended to Kernel (round 0), a few dozen objects instead of
        # one UnboundMethod per entry (~300).
        if round.zero? && Loadout::BACKEND == :native
          assert_operator made * 3, :<, made_full, "objects: #{made} vs #{made_full} for every entry"
        end
      end
    end
  end
end

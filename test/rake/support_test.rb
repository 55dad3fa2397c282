# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# Which rakes loadout/rake patches, and what it does with the others: nothing, and one warning.
class RakeSupportTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject

  def child(script, rake_lib: P.rake_libs.first)
    run_ruby(script, ruby_opts: ["-I", rake_lib], env: { "RUBYOPT" => nil })
  end

  PATCHED_OWNER = <<~'RUBY'
    owner = Rake::FileTask.instance_method(:needed?).owner
    puts "installed=#{owner.name.start_with?("Loadout::")} owner=#{owner}"
  RUBY

  P.rake_libs.each do |rake_lib|
    version = P.rake_version(rake_lib)

    test "rake #{version} is patched silently" do
      r = child(%(require "rake"\nrequire "loadout/rake"\n#{PATCHED_OWNER}), rake_lib: rake_lib)
      assert r.success?, r.stderr
      assert_equal "", r.stderr
      assert_match(/installed=true owner=Loadout::RakeMemo::Hooks::FileTask/, r.stdout)
    end
  end

  { "14.0.0" => "not supported", "12.2.1" => "not supported", "thirteen" => "not understood" }.each do |v, reason|
    test "rake reporting version #{v} is left alone with one warning" do
      script = <<~RUBY
        require "rake"
        Rake.send(:remove_const, :VERSION)
        Rake::VERSION = #{v.inspect}
        require "loadout/rake"
        #{PATCHED_OWNER}
        Rake.application.init("rake", [])
        Rake::Task.define_task(:hello) { puts "hello ran" }
        Rake::Task[:hello].invoke
      RUBY
      r = child(script)
      assert r.success?, r.stderr
      assert_equal 1, r.stderr.lines.size, r.stderr
      assert_match(/\Aloadout: loadout\/rake has no effect: .*#{reason}/, r.stderr)
      assert_match(/installed=false owner=Rake::FileTask/, r.stdout)
      assert_match(/hello ran/, r.stdout)
    end
  end

  test "a rake missing a hooked method is left alone with one warning" do
    script = <<~RUBY
      require "rake"
      Rake::TaskManager.send(:remove_method, :synthesize_file_task)
      require "loadout/rake"
      #{PATCHED_OWNER}
    RUBY
    r = child(script)
    assert r.success?, r.stderr
    assert_match(/\Aloadout: loadout\/rake has no effect: .*lacks Rake::Application#synthesize_file_task/, r.stderr)
    assert_equal 1, r.stderr.lines.size
    assert_match(/installed=false/, r.stdout)
  end

  test "a FileTask method already redefined by someone else is left alone with one warning" do
    script = <<~RUBY
      require "rake"
      class Rake::FileTask
        def timestamp
          File.exist?(name) ? File.mtime(name) : Rake::LATE
        end
      end
      require "loadout/rake"
      #{PATCHED_OWNER}
    RUBY
    r = child(script)
    assert r.success?, r.stderr
    assert_match(/\Aloadout: loadout\/rake has no effect: Rake::FileTask#timestamp already redefined/, r.stderr)
    assert_match(/installed=false/, r.stdout)
  end

  test "redefining a hooked method afterwards turns every hook off, with one warning" do
    script = <<~RUBY
      require "rake"
      require "loadout/rake"
      $calls = 0
      class Rake::FileTask
        def needed?
          $calls += 1
          true
        end
      end
      puts "installed=\#{Rake::FileTask.instance_method(:needed?).owner.name.start_with?("Loadout::")}"
      Rake.application.init("rake", [])
      Rake::FileTask.define_task("x.txt") { }
      Rake::Task["x.txt"].invoke
      puts "calls=\#{$calls}"
    RUBY
    r = child(script)
    assert r.success?, r.stderr
    assert_equal 1, r.stderr.lines.size, r.stderr
    assert_match(/\Aloadout: Rake::FileTask#needed\? was redefined after require "loadout\/rake"/, r.stderr)
    assert_match(/installed=false/, r.stdout)
    assert_match(/calls=1/, r.stdout, "the new definition must run")
  end

  test "redefining a hooked method in Rake::TaskManager afterwards turns every hook off, with one warning" do
    script = <<~RUBY
      require "rake"
      require "loadout/rake"
      $calls = 0
      module Rake::TaskManager
        def synthesize_file_task(task_name)
          $calls += 1
          nil
        end
      end
      puts "installed=\#{Rake::FileTask.instance_method(:needed?).owner.name.start_with?("Loadout::")}"
      Rake.application.init("rake", [])
      Rake::Task.define_task(:probe => "missing.txt")
      begin
        Rake::Task[:probe].invoke
      rescue RuntimeError => e
        puts e.message[/Don't know how to build task 'missing.txt'/]
      end
      puts "calls=\#{$calls}"
    RUBY
    r = child(script)
    assert r.success?, r.stderr
    assert_equal 1, r.stderr.lines.size, r.stderr
    assert_match(%r{\Aloadout: Rake::TaskManager#synthesize_file_task was redefined after require "loadout/rake"},
                 r.stderr)
    assert_match(/installed=false/, r.stdout)
    assert_match(/calls=1/, r.stdout, "the new definition must run")
  end

  test "loadout:precompile explains a missing CLI" do
    # A copy of lib/ without the CLI (a gem packaged without it): rake_tasks loads it by
    # absolute path, so only a missing file can make it unavailable.
    Dir.mktmpdir do |dir|
      FileUtils.cp_r(P::LIB, dir)
      lib = File.join(dir, File.basename(P::LIB))
      File.delete(File.join(lib, "loadout/cli.rb"))
      script = <<~'RUBY'
        require "rake"
        require File.join(ENV.fetch("T_LIB"), "loadout/rake_tasks")
        Rake.application.init("rake", [])
        begin
          Rake::Task["loadout:precompile"].invoke
        rescue Loadout::RakeTaskError => e
          puts "#{e.class}: #{e.message}"
        end
      RUBY
      r = run_ruby(script, ruby_opts: ["-I", P.rake_libs.first], env: { "RUBYOPT" => nil, "T_LIB" => lib })
      assert r.success?, r.stderr
      assert_match(/Loadout::RakeTaskError: loadout:precompile: the loadout CLI is unavailable \(cannot load such/,
                   r.stdout)
      assert_match(/the loadout CLI is unavailable \(cannot load such file -- .*cli/, r.stdout)
    end
  end
end

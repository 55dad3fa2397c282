# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# LOADOUT_STATS=1 wraps require and require_relative: prove in a child that both are timed and
# that the wrapping does not change what they do.
class StatsBootTest < Minitest::Test
  include Loadout::TestSupport::App

  SCRIPT = <<~RUBY
    require "loadout/setup"
    require_relative "lib/a"
    begin
      require_relative "lib/nope"
    rescue LoadError => e
      puts "error=\#{e.message}"
    end
    puts "a=\#{A}"
    Loadout::Stats.timings.each { |_, f| puts "timed=\#{f}" }
  RUBY

  test "require_relative is timed under its resolved path and keeps Ruby's behaviour" do
    files = [["Gemfile", ""], ["main.rb", SCRIPT],
             ["lib/a.rb", "require 'shellwords'; require_relative 'b'; A = B + 1"], ["lib/b.rb", "B = 41"]]
    with_files(files) do |dir|
      plain = spawn_ruby("main.rb", env: { "LOADOUT_DISABLE" => "1" }, chdir: dir)
      result = spawn_ruby("main.rb", env: { "LOADOUT_STATS" => "1" }, chdir: dir)
      assert result.success?, result.stderr
      assert_equal plain.stdout, result.stdout.lines.grep_v(/\Atimed=/).join
      timed = result.stdout.lines.grep(/\Atimed=/).map { |l| l.chomp.delete_prefix("timed=") }
      assert_includes timed, "#{dir}/lib/a"
      assert_includes timed, "#{dir}/lib/b"
      assert_includes timed, "shellwords"
      assert_includes plain.stdout, "error=cannot load such file -- #{dir}/lib/nope"
      assert_includes result.stderr, "loadout stats"
    end
  end
end

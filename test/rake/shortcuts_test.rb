# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# The invocation shortcuts of loadout/rake (lib/loadout/rake/task_patch*) stand in for stock
# code only while what they replace is rake's own. These Rakefiles customise that code after
# require "loadout/rake" in ways a shortcut would hide; stock and loadout runs must still print
# the same thing. (The differential tests cover the shortcuts on plain code, with breakers.)
class RakeShortcutsTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject

  # Up to date: b.o is newer than a.txt and h.h, so only :leaf's action runs. Every new_scope
  # call (one per invoked prerequisite in stock rake) prints a line.
  ARGUMENTS_RAKEFILE = <<~'RUBY'
    require "loadout/rake" if ENV["LOADOUT_RAKE_IN_RAKEFILE"] == "1"
    class Rake::TaskArguments
      alias_method :__test_new_scope, :new_scope
      def new_scope(names)
        puts "new_scope #{names.inspect}"
        __test_new_scope(names)
      end
    end
    file "b.o" => ["a.txt", "h.h"] do
      puts "EXEC b.o"
    end
    task(:leaf) { puts "EXEC leaf" }
    task default: ["b.o", :leaf]
  RUBY

  # A prerequisite class with its own timestamp (a stand-in for any class that overrides the
  # methods out_of_date? calls): out_of_date? must ask it, in stock's order.
  TIMESTAMP_RAKEFILE = <<~'RUBY'
    require "loadout/rake" if ENV["LOADOUT_RAKE_IN_RAKEFILE"] == "1"
    class StampTask < Rake::FileTask
      def timestamp
        puts "timestamp #{name}"
        super
      end
    end
    StampTask.define_task("a.txt")
    StampTask.define_task("h.h")
    file("b.o" => ["a.txt", "h.h"]) { puts "EXEC b.o" }
    task default: "b.o"
  RUBY

  def run_both(rakefile, rake_lib)
    base = Time.at(1_700_000_000, 5, :nsec)
    %i[stock loadout].map do |mode|
      with_files do |dir|
        File.write(File.join(dir, "Rakefile"), rakefile)
        { "a.txt" => base, "h.h" => base, "b.o" => base + 10 }.each do |path, time|
          P.write(dir, path, "#{path}\n", time)
        end
        P.run_rake(dir, [], mode: mode, rake_lib: rake_lib)
      end
    end
  end

  P.rake_libs.each do |rake_lib|
    version = P.rake_version(rake_lib)

    test "a customised TaskArguments#new_scope runs as often as stock (rake #{version})" do
      stock, loadout = run_both(ARGUMENTS_RAKEFILE, rake_lib)
      assert_equal 0, stock[2], stock[1]
      assert_equal 4, stock[0].lines.grep(/\Anew_scope/).size, stock[0]
      assert_equal stock, loadout
    end

    test "a prerequisite class's own timestamp is asked as in stock (rake #{version})" do
      stock, loadout = run_both(TIMESTAMP_RAKEFILE, rake_lib)
      assert_equal 0, stock[2], stock[1]
      assert_match(/timestamp a.txt\ntimestamp h.h\n/, stock[0])
      assert_equal stock, loadout
    end
  end
end

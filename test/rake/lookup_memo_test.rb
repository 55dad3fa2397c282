# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# loadout/rake remembers TaskManager#[] results during a run (lib/loadout/rake_memo/hooks.rb,
# Hooks::Application#[]). The differential tests cover it on stock Rake; these cover the two
# rules that keep it exact elsewhere.
class RakeLookupMemoTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject

  # An application class with its own lookup: its answers may change without any new task, so
  # nothing it returns is remembered, and it is asked as often as under stock Rake.
  OWN_LOOKUP = <<~'RUBY'
    require "rake"
    require "loadout/rake" if ENV["WITH_LOADOUT"] == "1"
    class CountingApp < Rake::Application
      attr_reader :calls
      def lookup(name, scope = nil)
        @calls = (@calls || 0) + 1
        super
      end
    end
    Rake.application = app = CountingApp.new
    app.init("rake", [])
    %w[a.txt b.txt].each { |f| File.write(f, f) }
    Rake::FileTask.define_task("a.txt")
    Rake::FileTask.define_task("b.txt")
    Rake::FileTask.define_task("out.txt" => ["a.txt", "b.txt"]) { }
    Rake::Task.define_task(default: ["out.txt", "a.txt"])
    before = app.calls || 0
    Rake::Task[:default].invoke
    puts "lookups=#{app.calls - before}"
  RUBY

  P.rake_libs.each do |rake_lib|
    version = P.rake_version(rake_lib)

    test "an application class with its own lookup is asked as often as stock (rake #{version})" do
      counts = %w[0 1].map do |with|
        Dir.mktmpdir do |dir|
          r = run_ruby(OWN_LOOKUP, ruby_opts: ["-I", rake_lib], env: { "RUBYOPT" => nil, "WITH_LOADOUT" => with },
                                   chdir: dir)
          assert r.success?, r.stderr
          Integer(r.stdout[/lookups=(\d+)/, 1])
        end
      end
      assert_operator counts[0], :>, 4, "stock asks more than once per name"
      assert_equal counts[0], counts[1]
    end
  end

  # Threads: a result computed while another thread added a task must not be kept, since that
  # task's drop may have come before the result is written.
  test "a lookup computed while a task was added is not remembered" do
    script = <<~'RUBY'
      require "rake"
      require "loadout/rake"
      run = Loadout::RakeMemo.const_get(:Run)
      app = Rake.application
      run.enter
      cache = run.lookups(app)
      task = Rake::Task.define_task(:t)
      run.remember(cache, :scope, "t") { task }
      # As when another thread adds a task while this one looks "u" up.
      run.remember(cache, :scope, "u") do
        run.task_added(app, "other")
        task
      end
      puts "kept=#{cache[:scope].keys.inspect}"
    RUBY
    r = run_ruby(script, ruby_opts: ["-I", P.rake_libs.first], env: { "RUBYOPT" => nil })
    assert r.success?, r.stderr
    assert_equal "kept=[\"t\"]\n", r.stdout
  end
end

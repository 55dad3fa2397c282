# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"

# A boot has one exit sequence (Boot.finish): the compile cache's finish runs first, while the
# store is open, then the records, the flush and the close. Proven in children, by what the next
# boot finds in the store.
class ExitSequenceTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  PROGRAM = <<~'RUBY'
    require "loadout"
    app_rb = File.join(APP, "lib/app.rb")
    events = []
    Loadout.instrumentation = ->(event, path, **info) { events << event if path == app_rb && info[:cache] == :iseq }
    Loadout.setup(cache_dir: File.join(APP, "cache"), root: APP)
    require app_rb
    puts APP_VALUE
    $stderr.puts "app.rb: #{events.join(",")}"
  RUBY

  def boot(app, env = {})
    r = run_ruby("APP = #{app.dump}\n#{PROGRAM}", env: { "RUBYOPT" => nil }.merge(env))
    assert r.success?, r.stderr
    [r.stdout, r.stderr[/^app\.rb: (.*)$/, 1] || flunk(r.stderr)]
  end

  def with_app
    Dir.mktmpdir("loadout-exit") do |dir|
      app = File.join(dir, "app")
      FileUtils.mkdir_p(File.join(app, "lib"))
      File.write(File.join(app, "lib/app.rb"), "APP_VALUE = [File.basename(__FILE__), 6 * 7].inspect\n")
      # Outside the racy window, so a stored entry is trusted by its stat on the next boot.
      old = Time.now - 60
      File.utime(old, old, File.join(app, "lib/app.rb"))
      yield app
    end
  end

  test "a capture-mode first boot is served on the second" do
    skip "ISeq caching is CRuby only" unless Loadout::CompileCache.supported?(:iseq)
    with_app do |app|
      assert_equal "miss", boot(app)[1]
      assert_match(/\A(hit|revalidated)\z/, boot(app)[1])
    end
  end
end

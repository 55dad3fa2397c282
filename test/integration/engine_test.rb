# frozen_string_literal: true

require "test_helper"
require_relative "app_helper"

# Whatever the engine (CRuby, JRuby under `bin/test --jruby`), a program behaves the same with
# loadout set up: the stdlib loads the same files (JRuby's `require "x.jar"` features included),
# YAML and JSON come back equal, and what this engine cannot serve stays off, said once.
class EngineTest < Minitest::Test
  include Loadout::TestSupport::App

  STDLIB = %w[yaml json stringio strscan set date io/wait cgi/escape zlib digest/sha2 securerandom].freeze

  # Prints what a program can observe of its requires and of YAML/JSON; sets loadout up when
  # WITH_LOADOUT is set (both runs load loadout, so only setting it up differs).
  SCRIPT = <<~RUBY
    require "loadout"
    Loadout.setup(cache_dir: File.join(Dir.pwd, "cache"), root: Dir.pwd) if ENV["WITH_LOADOUT"]
    base = $LOADED_FEATURES.dup
    #{STDLIB.inspect}.each { |f| puts "\#{f}=\#{require f}" }
    p YAML.unsafe_load_file("c.yml"), YAML.load_file("c.yml"), JSON.load_file("c.json")
    p StringScanner.new("ab").scan(/a/), StringIO.new("x").read, Date.new(2024, 1, 2).to_s
    lib = File.expand_path("loadout", $LOAD_PATH.first)
    puts ($LOADED_FEATURES - base).reject { |f| f.start_with?(lib) }
    if ENV["WITH_LOADOUT"]
      served = Loadout::CompileCache.stats.values_at(:yaml, :json).map { |s| s[:hits] + s[:revalidated] }
      warn "served=\#{served.inspect}"
    end
  RUBY

  test "the stdlib (JRuby's .jar features too), YAML and JSON behave the same with loadout, cold and warm" do
    with_files do |dir|
      File.write(File.join(dir, "main.rb"), SCRIPT)
      File.write(File.join(dir, "c.yml"), "a: [1, 2]\nb: {c: héllo}\n")
      File.write(File.join(dir, "c.json"), '{"a": [1, 2.5, null], "b": {"c": "héllo"}}')
      # Older than the compile cache's racy window (an entry for a file changed in the last two
      # seconds is not trusted), so the warm run can hit.
      past = Time.now - 60
      File.utime(past, past, File.join(dir, "c.yml"), File.join(dir, "c.json"))
      FileUtils.chmod_R("a+rX", dir)

      plain = spawn_ruby("main.rb", chdir: dir)
      assert plain.success?, plain.stderr
      assert_includes plain.stdout, "yaml=true"
      cold, warm = 2.times.map do
        spawn_ruby("main.rb", chdir: dir, env: { "WITH_LOADOUT" => "1" }).tap do |run|
          assert_equal plain.stdout, run.stdout, run.stderr
          assert_empty loadout_lines(run.stderr.sub(/^served=.*\n/, ""))
        end
      end
      assert_includes cold.stderr, "served=[0, 0]"
      # The warm boot was served by the YAML and JSON caches (a hit, or revalidated by digest: the
      # files' ctime is recent), on every engine.
      assert_includes warm.stderr, "served=[2, 1]", cold.stderr + warm.stderr
    end
  end

  test "the fixture app (vendored gems, YAML, JSON) boots the same with loadout, cold and warm" do
    with_app do |app|
      plain = plain_output(app)
      2.times do |i|
        result = boot_app!(app)
        assert_equal plain, without_marker(result.stdout), "boot #{i + 1}"
        assert_empty loadout_lines(result.stderr)
      end
    end
  end

  test "off CRuby the load-path index and the ISeq cache stay off, said once in LOADOUT_LOG, never warned" do
    with_app do |app|
      quiet = boot_app!(app)
      logged = boot_app!(app, env: { "LOADOUT_LOG" => "1" })
      off = logged.stderr.lines.grep(/ off /)
      if RUBY_ENGINE == "ruby"
        assert_empty off
      else
        assert_equal ["load_path", "iseq"].sort, off.map { |l| l.split[1] }.sort, logged.stderr
        assert_empty loadout_lines(quiet.stderr)
      end
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/subprocess"

# A program may empty or replace $LOAD_PATH after loadout's setup (ruby/ruby's test_require.rb
# does, and so do sandboxes and test runners). loadout must then load nothing of its own through
# $LOAD_PATH (it needs its files and Ruby's libraries by absolute path or already loaded) and the
# program must see exactly what it sees without loadout: no warning, the same results and errors.
# Setup happens here in the child itself, with nothing of loadout's preloaded beyond what
# `Loadout.setup` loads (lib/loadout/scan.rb is loaded lazily, at the first directory listing: on
# a warm boot, after setup).
class LoadPathRewriteTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  # RubyGems' require in place (no Bundler), as in ruby/ruby's own tests.
  NO_BUNDLER = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil, "BUNDLER_SETUP" => nil, "BUNDLE_BIN_PATH" => nil }.freeze

  SCRIPT = <<~'RUBY'
    require "loadout"
    Loadout.setup(cache_dir: "DIR/cache", root: "DIR") if ENV["WITH"]
    saved = $LOAD_PATH.dup
    def try
      p yield
    rescue LoadError => e
      p [e.class, e.message, e.path]
    end
    $LOAD_PATH.clear
    try { require "DIR/new/rewrite_a.rb" }
    try { require "rewrite_b" }
    try { require "rbconfig" }
    # A directory no earlier boot has listed: loadout lists it now, after $LOAD_PATH changed.
    fresh = "DIR/fresh_#{Process.pid}"
    Dir.mkdir(fresh)
    File.write("#{fresh}/rewrite_f.rb", "puts 'f'")
    $LOAD_PATH.replace([fresh, "DIR/new"])
    try { require "rewrite_f" }
    try { require "rewrite_b" }
    try { require "rewrite_nowhere" }
    $LOAD_PATH.shift
    try { require "rewrite_c" }
    $LOAD_PATH.push("DIR/new")
    try { require "rewrite_c" }
    $LOAD_PATH.pop
    $LOAD_PATH.replace(saved)
    try { require "set" }
  RUBY

  test "emptying or replacing $LOAD_PATH after setup: no warning, the same results as plain Ruby" do
    files = [["new/rewrite_a.rb", "puts 'a'"], ["new/rewrite_b.rb", "puts 'b'"], ["new/rewrite_c.rb", "puts 'c'"]]
    with_files(files) do |dir|
      File.write("#{dir}/main.rb", SCRIPT.gsub("DIR", dir))
      plain = run_ruby("load #{"#{dir}/main.rb".dump}", env: NO_BUNDLER.merge("WITH" => nil))
      cold = run_ruby("load #{"#{dir}/main.rb".dump}", env: NO_BUNDLER.merge("WITH" => "1"))
      # Warm: setup lists no directory, so the first listing (of DIR/new) happens after $LOAD_PATH
      # was replaced.
      with = run_ruby("load #{"#{dir}/main.rb".dump}", env: NO_BUNDLER.merge("WITH" => "1"))
      assert_equal "", plain.stderr
      assert_equal [plain.stdout, ""], [cold.stdout, cold.stderr]
      assert_equal plain.stdout, with.stdout
      assert_equal "", with.stderr, "loadout must not warn"
      assert File.file?("#{dir}/cache/store"), "loadout was set up in the child"
    end
  end

  # ruby/ruby's test_require.rb, test_require_changed_home: a "~" entry follows $HOME.
  test "a ~ item after $LOAD_PATH was replaced follows HOME, as in plain Ruby" do
    with_files([["foo_home.rb", "puts 'foo'"], ["a/bar_home.rb", "puts 'bar'"]]) do |dir|
      script = <<~RUBY
        require "loadout"
        Loadout.setup(cache_dir: "#{dir}/cache", root: "#{dir}") if ENV["WITH"]
        $:.replace([IO::NULL])
        $: << "~"
        ENV["HOME"] = "#{dir}"
        require "foo_home"
        ENV["HOME"] = "#{dir}/a"
        p :ok if require "bar_home"
      RUBY
      File.write("#{dir}/main.rb", script)
      results = [nil, "1", "1"].map do |with|
        run_ruby("load #{"#{dir}/main.rb".dump}", env: NO_BUNDLER.merge("WITH" => with))
      end
      assert_equal "foo\nbar\n:ok\n", results[0].stdout, results[0].stderr
      results.drop(1).each { |r| assert_equal [results[0].stdout, ""], [r.stdout, r.stderr] }
    end
  end
end

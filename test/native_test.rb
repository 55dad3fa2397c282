# frozen_string_literal: true

require "test_helper"
require "fileutils"

class NativeTest < Minitest::Test
  test "LOADOUT_PURE picks the backend once at load time" do
    script = 'require "loadout"; print Loadout::BACKEND.inspect'
    assert_equal ":native", run_ruby!(script, env: { "LOADOUT_PURE" => "0" }).stdout
    %w[1 true yes TRUE].each do |value|
      assert_equal ":ruby", run_ruby!(script, env: { "LOADOUT_PURE" => value }).stdout
    end
  end

  test "a bad LOADOUT_PURE value is a clear error naming the variable and the accepted values" do
    result = run_ruby('require "loadout"', env: { "LOADOUT_PURE" => "maybe" })
    refute result.success?
    assert_match(/LOADOUT_PURE: "maybe" is not accepted; use 1\/0\/true\/false\/yes\/no/, result.stderr)
  end

  # A copy of lib/ without the built extension, laid out as a source checkout (what a Gemfile's
  # `gem "loadout", path: ...` loads: Bundler builds no extension for it) or as an installed gem.
  def with_unbuilt_copy(checkout:)
    Dir.mktmpdir("loadout-unbuilt") do |dir|
      FileUtils.cp_r(Loadout::TestSupport::Subprocess::LIB, dir)
      Dir.glob(File.join(dir, "lib/loadout/*.{so,bundle}")).each { |f| File.delete(f) }
      if checkout
        root = File.expand_path("..", Loadout::TestSupport::Subprocess::LIB)
        FileUtils.mkdir_p(File.join(dir, "ext/loadout"))
        FileUtils.cp(File.join(root, "Rakefile"), dir)
        FileUtils.cp(File.join(root, "ext/loadout/extconf.rb"), File.join(dir, "ext/loadout"))
      end
      yield File.realpath(dir)
    end
  end

  def ruby_in(dir, script, *args, env: {})
    Open3.capture3({ "LOADOUT_PURE" => nil, "RUBYOPT" => nil }.merge(env), RbConfig.ruby, "-I", File.join(dir, "lib"),
                   "-e", script, *args)
  end

  test "the warning of a path gem without its extension says how to build it" do
    with_unbuilt_copy(checkout: true) do |dir|
      _, err, status = ruby_in(dir, 'require "loadout"')
      assert status.success?, err
      assert_equal 1, err.lines.size, err
      assert_equal "loadout: native extension unavailable (cannot load such file -- " \
                   "#{dir}/lib/loadout/loadout_ext); Loadout.setup leaves the app to plain Ruby (the pure-Ruby " \
                   "backend would boot most apps slower than that) and the rest of loadout uses that backend. Fix: " \
                   "build it with `rake compile` in #{dir}, using the Ruby that runs the app (Bundler does not " \
                   "build extensions of gems it loads from a path) (or set LOADOUT_PURE=1 to use the pure-Ruby " \
                   "backend everywhere, without this warning)\n", err
    end
  end

  test "the warning of an installed gem without its extension says to reinstall it" do
    with_unbuilt_copy(checkout: false) do |dir|
      _, err, = ruby_in(dir, 'require "loadout"')
      assert_equal 1, err.lines.size, err
      assert_includes err, "the rest of loadout uses that backend. Fix: reinstall loadout where a C compiler " \
                           "and Ruby's "
      assert_match(/\(`gem pristine loadout`, or `bundle pristine loadout` in a bundle\)/, err)
    end
  end

  test "a loadout command that runs worker processes warns once, not once per worker" do
    with_unbuilt_copy(checkout: true) do |dir|
      app = File.join(dir, "app")
      FileUtils.mkdir_p(app)
      80.times { |i| File.write(File.join(app, "f#{i}.rb"), "X#{i} = #{i}\n") }
      cli = 'require "loadout/cli"; exit Loadout::CLI.new(ARGV).run'
      out, err, status = ruby_in(dir, cli, "precompile", "-j", "2", "--cache-dir", File.join(dir, "cache"), app)
      assert status.success?, out + err
      assert_match(/with 2 workers/, out)
      assert_equal 1, err.lines.grep(/native extension unavailable/).size, err
    end
  end

  # The twins' setup alone (loadout's files compiled, no self cache, the checksums in Ruby) costs
  # a small app more than the caches save: a boot without the extension is plain Ruby's, unless
  # LOADOUT_PURE=1 asks for the twins. Bad options are still an error.
  test "without the compiled extension Loadout.setup leaves the app to plain Ruby, unless LOADOUT_PURE=1" do
    with_unbuilt_copy(checkout: false) do |dir|
      cache = File.join(dir, "cache")
      script = <<~'RUBY'
        require "loadout"
        print Loadout.setup(cache_dir: ARGV[0], root: Dir.pwd), " "
        # Which components setup loaded (an autoload still pending: not loaded).
        print %i[Boot Store CompileCache LoadPath].reject { |c| Loadout.autoload?(c) }.join(",")
        begin
          Loadout.setup(cache_dir: ARGV[0], trust: :sometimes)
        rescue Loadout::ConfigError => e
          print " ", e.message[/\Atrust: .*? is not accepted/]
        end
      RUBY
      out, err, status = ruby_in(dir, script, cache)
      assert status.success?, err
      assert_equal "false  trust: :sometimes is not accepted", out
      assert_equal 1, err.lines.size, err
      refute File.exist?(cache), "nothing written: the cache dir was never made"

      out, err, status = ruby_in(dir, script, cache, env: { "LOADOUT_PURE" => "1" })
      assert status.success?, err
      assert_equal "true Boot,Store,CompileCache,LoadPath trust: :sometimes is not accepted", out
      assert_empty err
      assert File.directory?(cache)
    end
  end

  test "without the compiled extension the gem works on the Ruby twins with one warning" do
    Dir.mktmpdir("loadout-nolib") do |dir|
      FileUtils.cp_r(Loadout::TestSupport::Subprocess::LIB, dir)
      Dir.glob(File.join(dir, "lib/loadout/*.{so,bundle}")).each { |f| File.delete(f) }
      script = 'require "loadout"; r = Loadout::Scan.call(ARGV[0]); print Loadout::BACKEND.inspect, " ", r.files.size'
      out, err, status = ruby_in(dir, script, File.join(dir, "lib"))
      assert status.success?, err
      assert_match(/\A:ruby \d+\z/, out)
      refute_equal 0, out.split.last.to_i
      assert_equal 1, err.lines.grep(/loadout: native extension unavailable/).size, err
    end
  end
end

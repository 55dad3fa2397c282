# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "open3"
require_relative "../integration/app_helper"

# loadout's own files come from the self cache (those setup loads before the compile cache is
# installed) and the compile cache (the rest) wherever the app and the bundle holding loadout are
# restored: another path (a CI cache restored into another workspace), or the same path with new
# inodes and ctimes (a Docker COPY, a tar restore, a chown). Ruby compiles none of loadout's files
# on that first boot, setup or exit; the next boot serves them by their stat again.
class SelfCacheRelocationTest < Minitest::Test
  include Loadout::TestSupport::App # clean_env: the copy's lib is the only loadout the child sees
  PROGRAM = <<~'RUBY'
    require "loadout"
    # Below loadout's hooks (prepended later, so called first): sees the files they leave to Ruby.
    compiled = []
    RubyVM::InstructionSequence.singleton_class.prepend(Module.new do
      define_method(:load_iseq) do |path|
        compiled << path if path.start_with?(LIB)
        defined?(super) ? super(path) : nil
      end
    end)
    at_exit do # registered first: runs after loadout's own exit sequence (its self cache rewrite)
      $stderr.puts "compiled=#{compiled.map { |f| f.delete_prefix(LIB) }.sort.join(",")}"
    end
    # Files Loadout.setup loads before its self cache can serve (Config, AppRoot, SelfCache itself).
    Loadout::Config
    Loadout::SelfCache
    before = $LOADED_FEATURES.size
    Loadout.setup(cache_dir: CACHE, root: APP)
    setup_files = $LOADED_FEATURES.drop(before).count { |f| f.start_with?(LIB) }
    iseq = Loadout::CompileCache.stats[:iseq]
    $stderr.puts "setup_files=#{setup_files} served=#{Loadout::SelfCache.served} " \
                 "revalidated=#{Loadout::SelfCache.respond_to?(:revalidated) ? Loadout::SelfCache.revalidated : 0} cc_served=#{iseq[:hits] + iseq[:revalidated]} " \
                 "cc_misses=#{iseq[:misses]}"
    # Where loadout's code thinks it is: paths from relocated binaries, and a file found through
    # __dir__ (an autoload) after setup.
    puts Loadout::Boot.method(:setup).source_location[0]
    puts Loadout::Eviction.instance_method(:call).source_location[0]
  RUBY

  def boot(lib, app, cache)
    code = "LIB = #{"#{lib}/".dump}; APP = #{app.dump}; CACHE = #{cache.dump}\n#{PROGRAM}"
    out, err, status = Open3.capture3(clean_env("LOADOUT_PURE" => "0"), RbConfig.ruby, "-I", lib, "-e", code)
    assert status.success?, err
    counts = err.scan(/(\w+)=(\d+)/).to_h { |k, v| [k, v.to_i] }
    counts["compiled"] = err[/^compiled=(.*)$/, 1].to_s.split(",")
    [out.lines.map(&:chomp), counts, err]
  end

  # The files of loadout's Ruby compiles on every boot, warm or not: those loaded before the self
  # cache can serve (Config, AppRoot, SelfCache itself, and Trust with its DirHandle: the cache dir
  # is checked and held open before the self cache file is read from it). A boot at another place
  # compiles no more: the compile cache's entries are relocated in C, and the self cache is
  # written again from the entries it relocated (ISeqBuild, and the iseq_binary.rb it loads, are
  # not needed).
  ALWAYS = %w[loadout/app_root.rb loadout/config.rb loadout/self_cache.rb loadout/trust.rb
              loadout/trust/dir_handle.rb].freeze

  def copy_lib(to)
    FileUtils.mkdir_p(File.dirname(to))
    FileUtils.cp_r(File.expand_path("../../lib", __dir__), to)
  end

  test "a lib dir restored at another path is served by digest, relocated, then by stat: Ruby compiles none of it" do
    skip "the self cache is the native backend's" unless Loadout::BACKEND == :native
    Dir.mktmpdir("loadout-selfmove") do |dir|
      # The app with its bundle inside (vendor/), as a CI job restores both into a workspace.
      build = File.join(dir, "build/app")
      built = File.join(build, "vendor/bundle/lib")
      copy_lib(built)
      sleep 2.1 # past the racy window of the fresh copy: the build's entries vouch by stat
      boot(built, build, File.join(build, "tmp/cache")) # writes the self cache and the store
      _, counts, err = boot(built, build, File.join(build, "tmp/cache"))
      assert_operator counts["served"], :>=, 15
      assert_equal [0, ALWAYS], [counts["revalidated"], counts["compiled"]], err

      # A worker: the whole tree restored elsewhere, the build gone (a binary that still named
      # its paths would fail to find its files).
      worker = File.join(dir, "worker-1/app")
      FileUtils.mkdir_p(File.dirname(worker))
      FileUtils.cp_r(build, worker)
      FileUtils.rm_rf(File.join(dir, "build"))
      lib = File.join(worker, "vendor/bundle/lib")
      lines, counts, err = boot(lib, worker, File.join(worker, "tmp/cache"))
      assert_operator counts["served"], :>=, 15, err
      assert_equal counts["served"], counts["revalidated"], "every file served by digest at the new path: #{err}"
      assert_equal [0, ALWAYS], [counts["cc_misses"], counts["compiled"]], "Ruby compiled no more of " \
                                                                               "loadout's files than it must: #{err}"
      assert_equal ["#{lib}/loadout/boot.rb", "#{lib}/loadout/eviction.rb"], lines

      sleep 2.1 # (the rewrite at exit vouches by stat once the copy is past the racy window)
      boot(lib, worker, File.join(worker, "tmp/cache"))
      _, counts, err = boot(lib, worker, File.join(worker, "tmp/cache"))
      # (The compile cache's entries keep the build's paths: each boot here relocates them.)
      assert_equal [0, ALWAYS], [counts["revalidated"], counts["compiled"]], err
      assert_operator counts["served"], :>=, 15, err
    end
  end

  test "the same path with new inodes and ctimes (a Docker COPY, a chown) is served by digest, not compiled" do
    skip "the self cache is the native backend's" unless Loadout::BACKEND == :native
    Dir.mktmpdir("loadout-selfcopy") do |dir|
      app = File.join(dir, "app")
      lib = File.join(app, "vendor/bundle/lib")
      copy_lib(lib)
      cache = File.join(app, "tmp/cache")
      sleep 2.1
      boot(lib, app, cache)
      FileUtils.mv(app, "#{app}.old")
      FileUtils.cp_r("#{app}.old", app, preserve: true) # same paths and mtimes, new inodes and ctimes
      FileUtils.rm_rf("#{app}.old")
      lines, counts, err = boot(lib, app, cache)
      assert_operator counts["served"], :>=, 15, err
      assert_equal counts["served"], counts["revalidated"], err
      assert_equal [0, ALWAYS], [counts["cc_misses"], counts["compiled"]], err
      assert_equal "#{lib}/loadout/boot.rb", lines.first
    end
  end
end

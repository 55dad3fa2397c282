# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "loadout/self_cache"
require "open3"

# loadout's own files, loaded while it sets itself up (before its compile cache can serve
# anything), come from the self cache from the second boot on. Proven in children: how many were
# served, that the program behaves the same, and that a damaged file or an edited loadout file is
# never served.
class SelfCacheTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  PROGRAM = <<~'RUBY'
    require "loadout"
    Loadout.setup(cache_dir: File.join(APP, "cache"), root: APP)
    require File.join(APP, "lib/app")
    puts APP_VALUE
    $stderr.puts "served=#{Loadout::SelfCache.served}"
  RUBY

  def with_app(lib: nil)
    Dir.mktmpdir("loadout-self") do |dir|
      app = File.join(dir, "app")
      FileUtils.mkdir_p(File.join(app, "lib"))
      File.write(File.join(app, "lib/app.rb"), "APP_VALUE = [__FILE__, 6 * 7].inspect\n")
      if lib
        FileUtils.cp_r(LIB, lib_copy = File.join(dir, "lib"))
        lib = lib_copy
        # Fresh copies are inside the racy window (their ctime is now): never served until it passed.
        sleep 2.1
      end
      yield app, lib
    end
  end

  # Boots PROGRAM; returns [stdout, served, stderr without the served line]. The boot writes the
  # self cache at its exit, so it is on disk when this returns.
  def boot(app, lib: LIB, readonly: false)
    code = "APP = #{app.dump}\n#{PROGRAM}"
    code = code.sub("root: APP)", "root: APP, readonly: true)") if readonly
    out, err, status = Open3.capture3(RbConfig.ruby, "-I", lib, "-e", code)
    assert status.success?, err
    [out, err[/served=(\d+)/, 1].to_i, err.gsub(/^served=\d+\n/, "")]
  end

  def self_file(app)
    Dir.glob(File.join(app, "cache", "*.self-*")).first
  end

  test "from the second boot on loadout's own files come from the self cache; the program is the same" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app do |app, _|
      first, served_first, = boot(app)
      assert_equal 0, served_first
      refute_nil self_file(app), "the first boot's worker writes the self cache"
      second, served, err = boot(app)
      assert_operator served, :>=, 15, "boot.rb, the store's and the compile cache's files"
      assert_equal first, second
      assert_equal "[#{File.join(app, "lib/app.rb").inspect}, 42]\n", second
      assert_equal "", err
      written = File.mtime(self_file(app))
      boot(app)
      assert_equal written, File.mtime(self_file(app)), "an up-to-date self cache is not rewritten"
    end
  end

  test "a damaged self cache is ignored without a word, then rewritten" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app do |app, _|
      expected, = boot(app)
      path = self_file(app)
      data = File.binread(path)
      data.setbyte(data.bytesize / 2, data.getbyte(data.bytesize / 2) ^ 0x20)
      File.binwrite(path, data)
      out, served, err = boot(app)
      assert_equal [expected, 0, ""], [out, served, err]
      assert_operator boot(app)[1], :>, 0, "rewritten by the damaged boot's worker"
    end
  end

  test "an edited loadout file is compiled by Ruby, not served, and the edit takes effect" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app(lib: true) do |app, lib|
      boot(app, lib: lib)
      _, served_before, = boot(app, lib: lib)
      assert_operator served_before, :>=, 15
      File.write(File.join(lib, "loadout/boot.rb"), "\nLoadout::EDITED = :yes\n", mode: "a")
      code = PROGRAM.sub("puts APP_VALUE", "puts APP_VALUE, Loadout::EDITED")
      out, err, status = Open3.capture3(RbConfig.ruby, "-I", lib, "-e", "APP = #{app.dump}\n#{code}")
      assert status.success?, err
      assert_equal "yes", out.lines.last.chomp
      assert_equal served_before - 1, err[/served=(\d+)/, 1].to_i
    end
  end

  test "a second setup call (a no-op) does not read the self cache again" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app do |app, _|
      boot(app)
      code = <<~RUBY
        require "loadout"
        Loadout.setup(cache_dir: File.join(#{app.dump}, "cache"), root: #{app.dump})
        reads = 0
        File.singleton_class.prepend(Module.new do
          define_method(:binread) do |*a|
            reads += 1 if a.first.to_s.include?(".self-")
            super(*a)
          end
        end)
        Loadout.setup(cache_dir: File.join(#{app.dump}, "cache"), root: #{app.dump})
        print reads
      RUBY
      assert_equal "0", run_ruby!(code).stdout
    end
  end

  test "a readonly setup reads the self cache but never writes one" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app do |app, _|
      boot(app, readonly: true)
      assert_nil self_file(app)
    end
  end

  test "a store that is open read-only gets no self cache job, even when readonly was not asked for" do
    skip "native backend only" unless Loadout::BACKEND == :native
    Dir.mktmpdir("loadout-self-ro") do |dir|
      config = Loadout::Config.new(cache_dir: dir, root: dir) # readonly: false
      Loadout::Store.open(config.store_path, &:close)
      jobs = lambda do |store|
        Loadout::CompileCache.install!(store: store, iseq: false, yaml: false, json: false, roots: [dir])
        sc = Loadout::SelfCache
        { table: {}, stale: true, loaded_before: $LOADED_FEATURES.size - 1, path: "#{config.store_path}.self-x" }
          .each { |k, v| sc.instance_variable_set(:"@#{k}", v) }
        fake = File.join(Loadout::SelfCache::LIB, "loadout/version.rb")
        $LOADED_FEATURES << fake
        sc.send(:stop, config)
        # Taken back: this test process must not write a self cache at its exit.
        Loadout::CompileCache.instance_variable_get(:@finish_jobs).first
                             .tap { Loadout::CompileCache.instance_variable_set(:@finish_jobs, []) }
      ensure
        # The last copy of +fake+, not the last entry: an autoload may append its own file after
        # it, and popping that would make the next require load that file a second time.
        at = fake && $LOADED_FEATURES.rindex(fake)
        $LOADED_FEATURES.delete_at(at) if at
        Loadout::CompileCache.uninstall!
        store.close
      end
      refute_nil jobs.(Loadout::Store.open(config.store_path)), "a writable store gets the job"
      assert_nil jobs.(Loadout::Store.open(config.store_path, readonly: true))
    end
  end

  test "the file format round-trips and any damaged byte makes it unusable" do
    skip "native backend only (the self cache is off on the pure backend)" unless Loadout::BACKEND == :native
    entries = [["/lib/a.rb", "LOce entry a"], ["/lib/é.rb", "entry é".b], ["/lib/c.rb", ""]]
    data = Loadout::SelfCache.dump(entries)
    table = Loadout::SelfCache.parse(data)
    # Each entry's place in the file (offset << 32 | length), not a copy of it.
    assert_equal(entries.to_h { |p, e| [p, e.b] },
                 table.transform_values { |at| data.byteslice(at >> 32, at & 0xffff_ffff) })
    assert_equal Encoding::UTF_8, table.keys[1].encoding
    data.bytesize.times do |i|
      bad = data.dup
      bad.setbyte(i, bad.getbyte(i) ^ 0x01)
      assert_nil Loadout::SelfCache.parse(bad), "byte #{i}"
    end
    assert_nil Loadout::SelfCache.parse(data.byteslice(0, data.bytesize - 1))
    assert_nil Loadout::SelfCache.parse("")
  end
end

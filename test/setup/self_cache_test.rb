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
  def boot(app, lib: LIB, readonly: false, ruby_opts: [], prelude: "")
    code = "APP = #{app.dump}\n#{prelude}#{PROGRAM}"
    code = code.sub("root: APP)", "root: APP, readonly: true)") if readonly
    out, err, status = Open3.capture3(RbConfig.ruby, *ruby_opts, "-I", lib, "-e", code)
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

  # Counts what is compiled with compile_file (ISeqBuild's way, not Ruby's require) in a boot,
  # printed last (its at_exit is registered before loadout's).
  COMPILES = <<~'RUBY'
    $compiles = 0
    RubyVM::InstructionSequence.singleton_class.prepend(Module.new do
      def compile_file(*args, **kw)
        $compiles += 1
        super
      end
    end)
    at_exit { $stderr.puts "compiles=#{$compiles}" }
  RUBY

  # #boot, and how many compiles it counted: [stdout, served, compiles, the rest of stderr].
  def counted_boot(app, **kw)
    out, served, err = boot(app, prelude: COMPILES, **kw)
    [out, served, err[/compiles=(\d+)/, 1].to_i, err.gsub(/^compiles=\d+\n/, "")]
  end

  # A cold boot's self cache is made of what Ruby compiled while setup loaded loadout's files
  # (SelfCache::OwnCompiles), not of a second compile of each at exit.
  test "a cold boot writes the self cache from Ruby's own compiles; the next boot is served from it" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app do |app, _|
      first, served, compiles, = counted_boot(app)
      assert_equal [0, 0], [served, compiles], "a cold boot: nothing served, nothing compiled again"
      refute_nil self_file(app)
      second, served, compiles, err = counted_boot(app)
      assert_operator served, :>=, 15
      assert_equal [first, 0, ""], [second, compiles, err]
    end
  end

  # What a compile without -w captured is not known to be silent under -w: the first boot under
  # -w has Ruby compile those files and writes them again (ISeqBuild, which compiles with -w),
  # after which boots with and without -w are served.
  test "files captured without -w are compiled under -w once, then served with and without it" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app(lib: true) do |app, lib|
      counted_boot(app, lib: lib)
      _, served, compiles, = counted_boot(app, lib: lib, ruby_opts: ["-w"])
      assert_equal 0, served, "captured without -w: not served under -w"
      assert_operator compiles, :>=, 15, "written again by ISeqBuild"
      [["-w"], []].each do |opts|
        _, served, compiles, = counted_boot(app, lib: lib, ruby_opts: opts)
        assert_operator served, :>=, 15, opts.inspect
        assert_equal 0, compiles, opts.inspect
      end
    end
  end

  # A file whose compile printed a warning is not captured: ISeqBuild decides (a negative entry),
  # and every boot prints the warning, as Ruby does without loadout.
  test "a loadout file whose compile warns is not captured: its warning is printed by every boot" do
    skip "native backend only" unless Loadout::BACKEND == :native
    with_app(lib: true) do |app, lib|
      File.write(File.join(lib, "loadout/boot.rb"), "\nLoadout::DUPLICATED = { a: 1, a: 2 }\n", mode: "a")
      sleep 2.1 # (past the racy window again)
      3.times do |i|
        _, served, _, err = counted_boot(app, lib: lib)
        assert_includes err, "loadout/boot.rb", "boot #{i}: #{err}"
        assert_match(/warning: key :a is duplicated/, err, "boot #{i}")
        assert_operator served, :>=, 15, "boot #{i}" if i.positive?
      end
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
        fake = File.join(Loadout::SelfCache::LIB, "loadout/version.rb")
        # (What start and a fetch of +fake+ with no entry for it leave.)
        { table: {}, stale: true, loaded_before: $LOADED_FEATURES.size, path: "#{config.store_path}.self-x",
          kept: [], asked: [fake], refreshed: {} }.each { |k, v| sc.instance_variable_set(:"@#{k}", v) }
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
    captured = Loadout::SelfCache::CAPTURED
    entries = [["/lib/a.rb", "LOce entry a", 0], ["/lib/é.rb", "entry é".b, captured], ["/lib/c.rb", "", 0]]
    data = Loadout::SelfCache.dump(entries)
    table = Loadout::SelfCache.parse(data)
    # Each entry's place in the file (offset << 32 | length), not a copy of it, and bit 31 for a
    # captured entry.
    assert_equal(entries.to_h { |p, e, _| [p, e.b] },
                 table.transform_values { |at| data.byteslice(at >> 32, at & 0x7fff_ffff) })
    assert_equal [false, true, false], table.values.map { |at| at[31] == 1 }
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

# frozen_string_literal: true

require "test_helper"
require "support/scan_reference"
require "support/scan_trees"

class ScanTest < Minitest::Test
  Reference = Loadout::TestSupport::ScanReference
  Trees = Loadout::TestSupport::ScanTrees

  # Scans +root+ in a child Ruby on the chosen backend and returns [backend, result, reference].
  # As root, the child drops to nobody so that a chmod 000 directory really is unreadable.
  def scan_in_child(root, pure:, ignore: nil, prelude: "")
    File.chmod(0o755, root)
    script = <<~RUBY
      #{prelude}
      require "loadout"
      require "loadout/scan"
      $LOAD_PATH.unshift(#{File.expand_path("..", __dir__).inspect})
      require "support/scan_reference"
      if Process.uid.zero?
        Process::GID.change_privilege(65534)
        Process::UID.change_privilege(65534)
      end
      opts = {}
      opts[:ignore] = #{ignore.inspect} if #{!ignore.nil?}
      r = Loadout::Scan.call(ARGV[0], **opts)
      ref = Loadout::TestSupport::ScanReference.walk(ARGV[0], **opts)
      print [Marshal.dump([Loadout::BACKEND, r.to_a, ref])].pack("m0")
    RUBY
    res = run_ruby!(script, args: [root], env: { "LOADOUT_PURE" => pure ? "1" : "0" })
    backend, arr, ref = Marshal.load(res.stdout.unpack1("m0")) # rubocop:disable Security/MarshalLoad
    [backend, Loadout::Scan::Tree.new(*arr), ref]
  end

  def assert_backends_agree(root, ignore: nil)
    native_backend, native, ref = scan_in_child(root, pure: false, ignore: ignore)
    pure_backend, pure, = scan_in_child(root, pure: true, ignore: ignore)
    assert_equal :native, native_backend, "the native extension must be built for this test"
    assert_equal :ruby, pure_backend
    assert_equal native.to_a, pure.to_a, "native walk and Ruby twin must give identical output, in order"
    assert_equal ref, Reference.normalize(native), "scan must agree with the reference walk"
    native
  end

  test "native and ruby twin agree with each other and the reference on every edge case" do
    with_files do |dir|
      Trees.edge_tree(dir)
      result = assert_backends_agree(dir, ignore: ["node_modules", File.join(dir, "lib/ignored_abs")])

      assert_includes result.files, "lib/dir_named.rb/inside.rb"
      refute_includes result.files, "lib/dir_named.rb"
      assert_includes result.dirs, "lib/dir_named.rb"
      assert_includes result.files, "lib/pkg/linked_file.rb"
      assert_includes result.files, "lib/pkg/linked_dir/deeper/z.rb"
      assert_includes result.files, "lib/pkg/native.so"
      assert_includes result.files, "lib/ünïcødé.rb"
      assert_includes result.files, "lib/日本/語.rb"
      assert_includes result.files, "lib/.dotdir/dot.rb"
      assert_includes result.dirs, "lib/empty"
      refute(result.files.any? { |f| f.include?("node_modules") || f.include?("ignored_abs") })
      refute(result.files.any? { |f| f.end_with?(".txt") })
      assert_includes result.errors, ["lib/pkg/deep/loop", :loop]
      assert_includes result.errors, ["lib/pkg/broken.rb", :enoent]
      assert_includes result.errors, ["lib/locked", :eacces]
      assert_includes result.errors, ["lib/bad\xFFname.rb".b, :invalid_encoding]
      assert_includes result.errors, ["lib/bad\xFEdir".b, :invalid_encoding]
      refute(result.errors.any? { |path, _| path.include?("broken_dir") },
             "non-requirable broken links are skipped silently")
      assert(result.files.all? { |f| f.encoding == Encoding::UTF_8 && f.valid_encoding? })
    end
  end

  # Ruby 4.1's Dir.scan (Feature #21800) yields [name, type]; this shim stands in for it here so
  # the twin's Dir.scan path is exercised on older Rubies too.
  DIR_SCAN_SHIM = <<~RUBY
    def Dir.scan(path)
      [".", "..", *Dir.children(path)].each do |name|
        st = File.lstat(File.join(path, name))
        yield name, (st.symlink? ? :link : st.directory? ? :directory : st.file? ? :file : :other)
      end
    end
  RUBY

  test "the twin's Dir.scan path gives the same output as the native walk" do
    with_files do |dir|
      Trees.edge_tree(dir)
      Trees.random_tree(File.join(dir, "lib/pkg"), seed: 5, n: 120)
      _, native, = scan_in_child(dir, pure: false)
      backend, shimmed, = scan_in_child(dir, pure: true, prelude: DIR_SCAN_SHIM)
      assert_equal :ruby, backend
      assert_equal native.to_a, shimmed.to_a
    end
  end

  test "random trees give identical output on both backends" do
    [11, 23, 37].each do |seed|
      with_files do |dir|
        Trees.random_tree(dir, seed: seed)
        result = assert_backends_agree(dir)
        refute_empty result.files
      end
    end
  end

  test "walk order is a directory, its files, then its subdirectories depth first" do
    with_files([["b/x.rb"], ["a/y.rb"], ["top.rb"]]) do |dir|
      result = Loadout::Scan.call(dir)
      # readdir order is filesystem order, so derive the expectation from it
      order = Dir.children(dir)
      subdirs = order.select { |n| File.directory?(File.join(dir, n)) }
      assert_equal ["", *subdirs], result.dirs
      assert_equal ["top.rb", *subdirs.map { |d| "#{d}/#{d == "a" ? "y" : "x"}.rb" }], result.files
    end
  end

  test "a missing root or a root that is a file is an empty tree without errors" do
    result = Loadout::Scan.call("/nonexistent/loadout/#{rand(1 << 30)}")
    assert_empty result.files
    assert_empty result.dirs
    assert_empty result.errors
    with_files([["file.rb", "x"]]) do |dir|
      result = Loadout::Scan.call(File.join(dir, "file.rb"))
      assert result.empty?
      assert_empty result.errors
    end
  end

  test "directory mtimes are nanosecond mtimes of each directory" do
    with_files([["a/b/c.rb"], ["d/"]]) do |dir|
      result = Loadout::Scan.call(dir)
      result.dirs.zip(result.dir_mtimes).each do |rel, mtime|
        st = File.stat(rel.empty? ? dir : File.join(dir, rel))
        assert_equal (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec, mtime, rel
      end
      assert_equal 4, result.dirs.size
    end
  end

  test "extensions and ignore lists are configurable" do
    with_files([["a.rb"], ["b.rake"], ["vendor/c.rb"], ["keep/d.rake"]]) do |dir|
      result = Loadout::Scan.call(dir, extensions: [".rake"], ignore: ["vendor"])
      assert_equal ["b.rake", "keep/d.rake"], result.files.sort
      refute_includes result.dirs, "vendor"
      result = Loadout::Scan.call(dir, ignore: [File.join(dir, "keep")])
      assert_equal ["a.rb", "vendor/c.rb"], result.files.sort
    end
  end

  test "bad arguments raise ArgumentError naming the option" do
    error = assert_raises(ArgumentError) { Loadout::Scan.call("/tmp", extensions: [:rb]) }
    assert_match(/extensions/, error.message)
    error = assert_raises(ArgumentError) { Loadout::Scan.call("/tmp", ignore: [1]) }
    assert_match(/ignore/, error.message)
  end

  test "a directory that vanishes mid-walk is skipped and reported as enoent" do
    skip "strace is needed to inject ENOENT (bin/setup-deps installs it)" unless system("command -v strace >/dev/null")
    with_files([["lib/keep.rb"], ["lib/gone/x.rb"]]) do |dir|
      gone = File.join(dir, "lib/gone")
      %w[0 1].each do |pure|
        script = 'require "loadout"; r = Loadout::Scan.call(ARGV[0]); p [r.files.sort, r.errors]'
        out = IO.popen({ "LOADOUT_PURE" => pure },
                       ["strace", "-f", "-qq", "-o", "/dev/null", "-P", gone, "-e", "trace=openat",
                        "-e", "inject=openat:error=ENOENT", RbConfig.ruby, "-I", LIB_DIR, "-e", script, dir], &:read)
        assert_equal '[["lib/keep.rb"], [["lib/gone", :enoent]]]', out.strip, "backend pure=#{pure}"
      end
    end
  end

  test "the native walk stats no regular file: adding 40 files adds no stat call" do
    skip "strace is needed to count syscalls" unless system("command -v strace >/dev/null")
    counts = [0, 40].map do |nfiles|
      with_files((0..3).map { |d| ["d#{d}/"] } + (1..nfiles).map { |i| ["d#{i % 4}/f#{i}.rb"] }) do |dir|
        log = "#{dir}.strace"
        script = 'require "loadout"; Loadout::Scan.call(ARGV[0])'
        system({ "LOADOUT_PURE" => "0" }, "strace", "-f", "-qq", "-o", log, "-e",
               "trace=stat,lstat,newfstatat,statx,fstat", RbConfig.ruby, "-I", LIB_DIR, "-e", script, dir)
        File.readlines(log).size
      ensure
        File.delete(log) if log && File.exist?(log)
      end
    end
    assert_operator counts[0], :>, 0, "strace saw no stat call at all: the check would be vacuous"
    assert_equal counts[0], counts[1], "regular files must be classified by d_type, not stat"
  end

  LIB_DIR = File.expand_path("../../lib", __dir__)
end

# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"

class CompileCacheKeyTest < Minitest::Test
  Key = Loadout::CompileCache::Key

  def setup
    @key = Key.new(["/app", "/gems/rack-3.0.8", "/usr", "/usr/lib/ruby/gems/3.1.0/gems/json-2.6.1"])
    @v = @key.variant(:iseq, "opts")
  end

  test "a path is keyed relative to the deepest root containing it" do
    assert_equal "cc/i/#{@v}/~/lib/a.rb", @key.for("i", @v, "/app/lib/a.rb")
    assert_equal "cc/i/#{@v}/rack-3.0.8/lib/rack.rb", @key.for("i", @v, "/gems/rack-3.0.8/lib/rack.rb")
    assert_equal "cc/i/#{@v}/usr/lib/ruby/3.1.0/set.rb", @key.for("i", @v, "/usr/lib/ruby/3.1.0/set.rb")
    assert_equal "cc/i/#{@v}/json-2.6.1/lib/json.rb",
                 @key.for("i", @v, "/usr/lib/ruby/gems/3.1.0/gems/json-2.6.1/lib/json.rb")
    assert_equal Encoding::BINARY, @key.for("i", @v, "/app/lib/é.rb").encoding
    # Multibyte characters before the last slash: the directory is cut out by its bytes.
    assert_equal "cc/i/#{@v}/~/café/x.rb".b, @key.for("i", @v, "/app/café/x.rb")
    assert_equal "cc/i/#{@v}/~/café/é/z.rb".b, @key.for("i", @v, "/app/café/é/z.rb")
    assert_equal "cc/i/#{@v}/~/café/x.rb".b, @key.for("i", @v, "/app/café/x.rb".b)
    assert_equal "cc/i/#{@v}/~/".b, @key.for("i", @v, "/app/")
    assert_equal "cc/i/#{@v}//".b, @key.for("i", @v, "/")
  end

  test "consecutive paths in similar directories get the keys a fresh Key gives each" do
    roots = ["/app", "/gems/rack-3.0.8", "/usr", "/usr/lib/ruby/gems/3.1.0/gems/json-2.6.1"]
    paths = ["/app/lib/a.rb", "/app/lib/b.rb", "/app/lia/c.rb", "/app/lib/d.rb", "/app/lib/x/e.rb", "/app/lib/f.rb",
             "/x.rb", "/y.rb", "/app/l.rb", "/gems/rack-3.0.8/lib/rack.rb", "/gems/rack-3.0.8/lic/rack.rb",
             "/app/lib/é.rb", "/app/lib/é.rb".b, "/app/lib/a.rb", "/usr/lib/ruby/3.1.0/set.rb",
             "/usr/lib/ruby/3.1.0/set.rb", "/usr/lib/ruby/3.1.1/set.rb", "/tmp/a.rb", "/tmp/b.rb", "rel.rb",
             "/app/caf\u00e9/x.rb", "/app/caf\u00e9/y.rb", "/app/caf\u00e9/\u00e9/z.rb", "/app/caf\u00e9/x.rb".b,
             "/", "/app/"]
    paths.each do |path|
      assert_equal Key.new(roots).for("i", @v, path), @key.for("i", @v, path), path.inspect
      assert_equal Key.new(roots).stable?(path), @key.stable?(path), path.inspect
    end
  end

  # Native.cc_key builds the key of an ASCII path by comparing it with each root; Key's Ruby is
  # the reference it must equal, for every sequence of paths (what Ruby resolved before included).
  test "keys built natively equal the Ruby-built ones, whatever came before" do
    roots = ["/app", "/gems/rack-3.0.8", "/usr", "/usr/lib/ruby/gems/3.1.0/gems/json-2.6.1", "/caf\u00e9"]
    dirs = ["/app/lib", "/app/li", "/app/lib/x", "/gems/rack-3.0.8/lib", "/usr/lib/ruby/3.1.0", "/tmp", "/",
            "/app/caf\u00e9", "/caf\u00e9/lib", "/usr/lib/ruby/gems/3.1.0/gems/json-2.6.1/lib/json", ""]
    names = ["a.rb", "b.rb", "\u00e9.rb", "a", ""]
    encodings = [Encoding::UTF_8, Encoding::BINARY, Encoding::EUC_JP, Encoding::US_ASCII]
    rng = Random.new(7)
    native = Key.new(roots)
    ruby = Key.new(roots)
    ruby.instance_variable_set(:@native, nil)
    built = 0
    dir = nil
    3000.times do
      dir = dirs.sample(random: rng) if dir.nil? || rng.rand(3).zero? # files directory by directory, mostly
      path = "#{dir}/#{names.sample(random: rng)}"
      path = rng.rand(5).zero? ? path.dup.force_encoding(encodings.sample(random: rng)) : path
      if Loadout::BACKEND == :native
        built += 1 if Loadout::Native.cc_key("i", @v, path, native.instance_variable_get(:@native_roots), nil)
      end
      assert_equal ruby.for("i", @v, path), native.for("i", @v, path), path.inspect
      assert_equal ruby.stable?(path), native.stable?(path), path.inspect
    end
    assert_operator built, :>, 1500, "the native builder answered" if Loadout::BACKEND == :native
  end

  # Key finds a directory's root by comparing it with each root; the definition it must keep is
  # the walk up the directory's ancestors, looked up by name, that this reference spells out.
  test "a directory's root is its deepest ancestor among the roots, as a walk up its parents finds" do
    roots = ["/app", "/app/vendor/gems/x-1", "/usr", "/usr/lib/ruby/gems/3.4.0/gems/json-2.9.1", "/caf\u00e9",
             "/caf\u00e9/\u00e9t\u00e9", "/srv/a b", "/"]
    parts = ["app", "vendor", "gems", "x-1", "x-10", "usr", "lib", "ruby", "caf\u00e9", "\u00e9t\u00e9", "srv", "a b",
             "json-2.9.1", "3.4.0", "", "appx"]
    encodings = [Encoding::UTF_8, Encoding::BINARY, Encoding::EUC_JP, Encoding::US_ASCII]
    rng = Random.new(11)
    [roots, roots[0..-2], roots.reverse, ["/app", "/app/vendor/gems/x-1"]].each do |set|
      key = Key.new(set)
      tags = key.root_tags
      stable = set.each_with_index.to_h { |r, i| [r, !i.zero?] }
      2000.times do
        path = "/#{Array.new(rng.rand(0..5)) { parts.sample(random: rng) }.join("/")}/f.rb".sub(%r{\A//}, "/")
        path = path.dup.force_encoding(encodings.sample(random: rng)) if rng.rand(4).zero?
        slash = path.rindex("/")
        dir = slash.zero? ? "/" : path[0, slash]
        expected_prefix, expected_stable = reference_root(dir, tags, stable)
        rest = path.b[(slash.zero? ? 0 : dir.bytesize)..]
        expected = expected_prefix ? "cc/i/v/#{expected_prefix.b}#{rest}" : "cc/i/v/#{path.b}"
        assert_equal expected.b, key.for("i", "v", path).b, "#{path.inspect} (#{path.encoding}) under #{set.inspect}"
        assert_equal expected_stable, key.stable?(path), path.inspect
      end
    end
  end

  test "a new directory's first key makes one object natively, four in Ruby, however deep the directory" do
    skip "no allocation counter on #{RUBY_ENGINE}" unless RUBY_ENGINE == "ruby"
    # (Natively: the key. In Ruby: also its directory, the directory's prefix in keys and the pair
    # Key records.)
    expected = Loadout::BACKEND == :native ? 1 : 4
    [1, 4, 12].each do |depth|
      paths = Array.new(50) { |i| "/usr/lib/#{(["d"] * depth).join("/")}#{i}/a.rb" }
      before = GC.stat(:total_allocated_objects)
      paths.each { |path| @key.for("i", @v, path) }
      assert_equal expected, (GC.stat(:total_allocated_objects) - before) / 50, "depth #{depth}"
    end
  end

  # A warm boot looks up one key per file it loads and keeps none: ISeqHandler#fetch gives each
  # back (#release) and the next is written into it.
  test "a lookup key given back is written over by the next lookup: no object per lookup natively" do
    skip "no allocation counter on #{RUBY_ENGINE}" unless RUBY_ENGINE == "ruby"
    paths = Array.new(50) { |i| "/usr/lib/#{"d/" * (i % 7)}f#{i}.rb" } # longer and shorter keys in turn
    expected = paths.map { |path| @key.for("i", @v, path) }
    @key.release(@key.lookup_key("i", @v, paths[0]))
    before = GC.stat(:total_allocated_objects)
    paths.each { |path| @key.release(@key.lookup_key("i", @v, path)) }
    made = GC.stat(:total_allocated_objects) - before
    before = GC.stat(:total_allocated_objects)
    paths.each { |path| @key.for("i", @v, path) }
    built = GC.stat(:total_allocated_objects) - before
    # Per lookup (GC.stat itself may make one object): none natively; in Ruby what #for makes
    # (the Ruby builder has no String to write into).
    assert_operator built / 50, :>=, 1
    assert_equal Loadout::BACKEND == :native ? 0 : built / 50, made / 50
    paths.each_with_index do |path, i|
      key = @key.lookup_key("i", @v, path)
      assert_equal expected[i], key, path
      assert_equal Encoding::BINARY, key.encoding
      @key.release(key)
    end
  end

  test "a lookup key not given back is never written into again; a frozen one is not taken" do
    @key.release(@key.lookup_key("i", @v, "/usr/lib/zz.rb")) # (one to take)
    first = @key.lookup_key("i", @v, "/usr/lib/a.rb")
    second = @key.lookup_key("i", @v, "/usr/lib/bb.rb") # (another thread's, while the first is in use)
    refute_same first, second
    assert_equal [@key.for("i", @v, "/usr/lib/a.rb"), @key.for("i", @v, "/usr/lib/bb.rb")], [first, second]
    frozen = @key.for("i", @v, "/usr/lib/c.rb").freeze
    @key.release(frozen)
    third = @key.lookup_key("i", @v, "/usr/lib/dd.rb")
    refute_same frozen, third
    assert_equal [@key.for("i", @v, "/usr/lib/c.rb"), @key.for("i", @v, "/usr/lib/dd.rb")], [frozen, third]
    assert_equal @key.for("i", @v, "/usr/lib/a.rb"), first
  end

  def reference_root(dir, tags, stable)
    d = dir
    loop do
      if (tag = tags[d])
        rel = d == "/" ? dir[1..] : dir[d.length + 1..]
        return [rel.nil? || rel.empty? ? tag : "#{tag}/#{rel}", stable[d]]
      end
      break if d == "/" || d.empty?

      i = d.rindex("/") or break
      d = i.zero? ? "/" : d[0, i]
    end
    [nil, false]
  end

  test "only paths under roots after the first are stable" do
    refute @key.stable?("/app/lib/a.rb")
    assert @key.stable?("/gems/rack-3.0.8/lib/rack.rb")
    assert @key.stable?("/usr/lib/ruby/3.1.0/set.rb")
    refute @key.stable?("/tmp/x.rb")
  end

  test "a path under no root keeps its absolute path, and a root prefix is not a root" do
    assert_equal "cc/i/#{@v}//tmp/x.rb", @key.for("i", @v, "/tmp/x.rb")
    assert_equal "cc/i/#{@v}//application/x.rb", @key.for("i", @v, "/application/x.rb")
  end

  test "the same files in another checkout get the same keys" do
    other = Key.new(["/home/ci/build-42", "/gems/rack-3.0.8"])
    assert_equal @key.for("y", @v, "/app/config/x.yml"), other.for("y", @v, "/home/ci/build-42/config/x.yml")
  end

  test "roots with the same basename get distinct tags" do
    key = Key.new(["/app", "/a/lib", "/b/lib"])
    refute_equal key.for("i", "v", "/a/lib/x.rb"), key.for("i", "v", "/b/lib/x.rb")
  end

  test "variants differ by kind and options but not by RUBY_DESCRIPTION (YJIT shares entries)" do
    refute_equal @key.variant(:iseq, "a"), @key.variant(:iseq, "b")
    refute_equal @key.variant(:iseq, "a"), @key.variant(:yaml, "a")
    assert_equal @key.variant(:iseq, "a"), Key.new([]).variant(:iseq, "a")
    source = File.read(File.expand_path("../../lib/loadout/compile_cache/key.rb", __dir__))
    refute_match(/^[^#]*RUBY_DESCRIPTION/, source)
  end

  test "stat records live under their own prefix" do
    assert_equal "cc/s/i/v/~/a.rb", Key.stat_key("cc/i/v/~/a.rb")
    key = "cc/i/v/~/caf\u00e9.rb".b.freeze
    stat = Key.stat_key(key)
    assert_equal "cc/s/i/v/~/caf\u00e9.rb".b, stat
    assert_equal Encoding::BINARY, stat.encoding
    refute stat.frozen?
  end

  test "an entry's key is one new String (a warm boot builds one per file)" do
    skip "no allocation counter on #{RUBY_ENGINE}" unless RUBY_ENGINE == "ruby"
    paths = ["/app/lib/a.rb", "/app/lib/b.rb", "/gems/rack-3.0.8/lib/rack/#{"x" * 40}.rb", "/usr/x.rb"]
    paths.each do |path|
      @key.for("i", @v, path)
      before = GC.stat(:total_allocated_objects)
      100.times { @key.for("i", @v, path) }
      assert_equal 1, (GC.stat(:total_allocated_objects) - before) / 100, path
    end
  end

  test "a stat record's key is one new String (the stat-record path builds one per file)" do
    skip "no allocation counter on #{RUBY_ENGINE}" unless RUBY_ENGINE == "ruby"
    key = "cc/i/3d96ea7937db6d5c/~/app/controllers/#{"x" * 40}.rb".b
    Key.stat_key(key)
    before = GC.stat(:total_allocated_objects)
    100.times { Key.stat_key(key) }
    assert_equal 1, (GC.stat(:total_allocated_objects) - before) / 100
  end
end

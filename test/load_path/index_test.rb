# frozen_string_literal: true

require "test_helper"

# The table and the lookup: the backend under test, and the Ruby twin against the C one on the
# same inputs (when the extension is built).
class LoadPathIndexTest < Minitest::Test
  LP = Loadout::LoadPath
  TWIN = LP::RubyIndex

  def listing(names)
    names.empty? ? "" : "#{names.join("\0")}\0"
  end

  def table(*lists, opaque_at: nil)
    listings = lists.map { |l| LP::Index.listing(listing(l)) }
    listings.insert(opaque_at, nil) if opaque_at
    bases = listings.each_with_index.map { |l, i| l && "/e#{i}" }
    LP::Index.table(listings, bases)
  end

  def look(table, feature)
    found = LP::Index.lookup(table, feature)
    found.is_a?(Array) ? "e#{found[0]}/#{found[1]}" : found
  end

  test "the first item holding a name wins; x.rb in any item beats x.so in an earlier one" do
    t = table(%w[x.so y.rb], %w[x.rb y.rb z.so])
    assert_equal "e1/x.rb", look(t, "x")
    assert_equal "e0/x.so", look(t, "x.so")
    assert_equal "e0/x.so", look(t, "x.o"), "Ruby maps .o to DLEXT"
    assert_equal "e0/y.rb", look(t, "y")
    assert_equal "e1/z.so", look(t, "z")
    assert_equal "e0/y.rb", look(t, "y.rb")
    assert_equal :miss, look(t, "z.rb")
    assert_equal :miss, look(t, "nope")
  end

  test "unknown extensions keep the whole name, like load.c" do
    t = table(%w[task.rake.rb v1.2/x.rb])
    assert_equal "e0/task.rake.rb", look(t, "task.rake")
    assert_equal "e0/v1.2/x.rb", look(t, "v1.2/x")
    assert_equal :miss, look(t, "task")
  end

  test "an item the index cannot describe makes what lies after it unknown" do
    t = table(%w[x.rb], %w[y.rb z.so], opaque_at: 1)
    assert_equal "e0/x.rb", look(t, "x")
    assert_equal :unknown_entry, look(t, "y"), "the opaque item may hold y.rb"
    assert_equal :unknown_entry, look(t, "nope"), "a miss is only certain when every entry was listed"
    t2 = table(%w[x.so], opaque_at: 1)
    assert_equal :unknown_entry, look(t2, "x"), "the opaque entry may hold x.rb, which beats x.so"
    assert_equal "e0/x.so", look(t2, "x.so")
  end

  test "bad listings are refused" do
    assert_raises(ArgumentError) { LP::Index.listing("no-terminator") }
    assert_raises(ArgumentError) { LP::Index.listing("a.rb\0\0b.rb\0") }
    assert_raises(ArgumentError) { LP::Index.table([LP::Index.listing("")], []) }
  end

  test "the twin answers exactly like the C table on thousands of names" do
    skip "the C extension is not built (LOADOUT_PURE=1 runs the twin alone)" unless Loadout::BACKEND == :native

    names = (0...3000).map { |i| "d#{i % 13}/f#{i % 1000}.#{i % 3 == 0 ? "so" : "rb"}" } + ["x.y.rb", "a/b.c/d.rb"]
    lists = Array.new(6) { |i| names.select.with_index { |_, j| (j * 7 + i) % 5 != 0 } }
    blobs = lists.map { |l| listing(l) }
    bases = Array.new(7) { |i| "/e#{i}" }
    [nil, 3].each do |opaque|
      native = blobs.map { |b| Loadout::Native.lp_listing(b) }
      twin = blobs.map { |b| TWIN::Listing.new(b) }
      [native, twin].each { |l| l.insert(opaque, nil) } if opaque
      n = Loadout::Native.lp_table(native, bases.first(native.size))
      r = TWIN::Table.new(twin, bases.first(twin.size))
      probes = names.map { |f| f.sub(/\.(rb|so)\z/, "") } + names + %w[nope d1/nope.rb x.y v1 a/b.c/d]
      probes.each do |f|
        assert_equal TWIN.lookup(r, f), Loadout::Native.lp_lookup(n, f), "#{f} (opaque at #{opaque.inspect})"
      end
    end
  end

  test "dir freshness: every directory's mtime, the C and Ruby checks agree" do
    with_files([["a/b/c.rb", "nil"], ["a/d/", nil]]) do |dir|
      base = "#{dir}/a"
      dirs = ["", "b", "d"]
      mtimes = dirs.map do |d|
        st = File.stat(d.empty? ? base : "#{base}/#{d}")
        (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec
      end
      blob = "\0b\0d\0" # "" is the root itself
      packed = mtimes.pack("q*")
      checks = [TWIN.method(:dirs_fresh?)]
      checks << Loadout::Native.method(:lp_dirs_fresh) if Loadout::BACKEND == :native
      checks.each do |check|
        assert check.call(base, blob, packed), check.inspect
        refute check.call(base, blob, (mtimes.take(2) + [1]).pack("q*")), check.inspect
        refute check.call("#{dir}/nope", blob, packed), check.inspect
      end
    end
  end

  test "changed dirs (what a miss asks of every app dir): the C and Ruby answers agree" do
    with_files([["a/b/c.rb", "nil"], ["z/y.rb", "nil"]]) do |dir|
      mtime = lambda do |path|
        st = File.stat(path)
        (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec
      end
      load_dir = lambda do |base, dirs|
        d = LP::LoadDir.new(base, base, :volatile)
        d.base = base
        d.dirs = dirs && "#{dirs.join("\0")}\0"
        d.mtimes = dirs&.map { |rel| mtime.(rel.empty? ? base : "#{base}/#{rel}") }&.pack("q*")
        d
      end
      fresh = load_dir.("#{dir}/a", ["", "b"])
      root_gained = load_dir.("#{dir}/z", [""])
      sub_gained = load_dir.("#{dir}/a", ["", "b"])
      sub_gained.mtimes = [mtime.("#{dir}/a"), 1].pack("q*") # "b" changed since its listing
      still_missing = load_dir.("#{dir}/none", nil)
      appeared = load_dir.("#{dir}/later", nil)
      FileUtils.mkdir_p("#{dir}/later")
      root_gained.mtimes = [1].pack("q*")
      list = [fresh, root_gained, sub_gained, still_missing, appeared]
      expected = {
        "" => [root_gained, appeared], "b" => [root_gained, sub_gained, appeared],
        "b/c" => [root_gained, sub_gained, appeared], "q" => [root_gained, appeared]
      }
      answers = [TWIN.method(:changed_dirs)]
      answers << Loadout::Native.method(:lp_changed_dirs) if Loadout::BACKEND == :native
      answers.each do |answer|
        expected.each do |sub, dirs|
          got = answer.call(list, sub)
          assert_equal dirs.map(&:object_id), got.map(&:object_id), "#{answer.inspect} #{sub.inspect}"
        end
        assert_nil answer.call([fresh, still_missing], ""), answer.inspect
        assert_nil answer.call([], "b"), answer.inspect
      end
    end
  end
end

# frozen_string_literal: true

require "test_helper"

class LoadPathIndexTest < Minitest::Test
  LP = Loadout::LoadPath
  RB_THEN_SO = LP::Feature::RB_THEN_SO

  def entry(name, files, kind: :stable)
    e = LP::Entry.new("/#{name}", "/#{name}", kind)
    e.files = files
    e
  end

  def found(index, stem, exts = RB_THEN_SO)
    r = index.lookup(stem, exts)
    r.is_a?(Array) ? r[0].abspath(r[1]) : r
  end

  test "first entry wins; .rb anywhere beats .so anywhere" do
    a = entry("a", %w[x.so y.rb])
    b = entry("b", %w[x.rb y.rb z.so])
    index = LP::Index.build([a, b])
    assert_equal "/b/x.rb", found(index, "x")
    assert_equal "/a/x.so", found(index, "x", LP::Feature::SO)
    assert_equal "/a/y.rb", found(index, "y")
    assert_equal "/b/z.so", found(index, "z")
    assert_nil found(index, "nope")
  end

  test "a blob table answers exactly like the hash table it was made from" do
    files = (0...500).map { |i| "d#{i % 7}/f#{i}.#{i.even? ? "rb" : "so"}" } + ["ünï/x.rb", "x.y.rb"]
    entries = Array.new(4) { |i| entry("e#{i}", files.select.with_index { |_, j| (j + i) % 3 != 0 }) }
    table = LP::Table.new(entries)
    mask, buckets = table.to_blob
    blob = LP::BlobTable.new(entries, mask, Marshal.load(Marshal.dump(buckets)))
    (files + %w[missing.rb d1/f.rb]).each do |rel|
      expected = table.min(rel)
      expected.nil? ? assert_nil(blob.min(rel), rel) : assert_equal(expected, blob.min(rel), rel)
    end
  end

  test "views: a push or unshift reuses the table, a removed entry makes its files unknown" do
    a = entry("a", %w[x.rb])
    b = entry("b", %w[x.rb y.rb])
    c = entry("c", %w[z.rb y.rb])
    LP::Index.build([a, b, c])
    d = entry("d", %w[w.rb], kind: :volatile)
    pushed = LP::Index.build([d, a, b, c])
    assert_equal 2, pushed.views.size
    assert_equal "/a/x.rb", found(pushed, "x")
    removed = LP::Index.build([b, c]) # a deleted
    assert_equal LP::Index::UNKNOWN, found(removed, "x"), "b may or may not hold x: only its first holder is known"
    assert_equal "/b/y.rb", found(removed, "y")
    reordered = LP::Index.build([c, a, b])
    assert_equal "/c/z.rb", found(reordered, "z")
    assert_equal LP::Index::UNKNOWN, found(reordered, "y")
  end

  test "consecutive volatile entries share one table; a rescanned one leaves a hole that is never a wrong answer" do
    comps = Array.new(50) { |i| entry("c#{i}", ["c#{i}/f.rb", "shared.rb"], kind: :volatile) }
    comps[20].files += ["only20.rb", "both.rb"]
    comps[30].files += ["both.rb"]
    gems = [entry("gem", %w[gem.rb both.rb])]
    index = LP::Index.build(comps + gems)
    assert_equal 1, index.views.size, "one table for the whole run, not one per app directory"
    assert_equal "/c7/c7/f.rb", found(index, "c7/f")
    assert_equal "/c0/shared.rb", found(index, "shared")
    assert_equal "/c20/both.rb", found(index, "both")

    # c20 rescanned (only20.rb and both.rb deleted): it gets its own table, the old listing stays.
    fresh = entry("c20", ["c20/f.rb", "shared.rb", "new20.rb"], kind: :volatile)
    rebuilt = LP::Index.build(comps[0, 20] + [fresh] + comps[21..] + gems)
    assert_equal 3, rebuilt.views.size
    assert_equal "/c20/new20.rb", found(rebuilt, "new20")
    assert_equal "/c20/c20/f.rb", found(rebuilt, "c20/f")
    assert_equal "/c40/c40/f.rb", found(rebuilt, "c40/f")
    assert_equal "/gem/gem.rb", found(rebuilt, "gem")
    assert_equal LP::Index::UNKNOWN, found(rebuilt, "only20") # Ruby answers (a LoadError)
    assert_nil found(rebuilt, "nowhere")
    # c30 and the gem still hold both.rb, but the shared table only knows c20 had it: unknown.
    assert_equal LP::Index::UNKNOWN, found(rebuilt, "both")
  end

  test "an opaque entry stops the search with unknown" do
    a = entry("a", %w[x.rb])
    o = LP::Entry.new(Object.new, nil, :opaque)
    b = entry("b", %w[y.rb])
    index = LP::Index.build([a, o, b])
    assert_equal "/a/x.rb", found(index, "x")
    assert_equal LP::Index::UNKNOWN, found(index, "y")
  end
end

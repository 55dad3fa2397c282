# frozen_string_literal: true

require "test_helper"

# A load dir per $LOAD_PATH item, and its stored listing's header, without a copy where none is
# needed: a boot makes one per item (hundreds on a large app).
class LoadPathListerTest < Minitest::Test
  LP = Loadout::LoadPath

  # File.expand_path is the reference: where Lister.expanded? says a path needs no expanding,
  # expanding it must give the path back.
  test "Lister.expanded? is true only for paths File.expand_path leaves as they are" do
    parts = ["a", ".", "..", "", ".x", "..y", "x.", "...", "b c", "~"]
    rng = Random.new(5)
    agreed = 0
    20_000.times do
      path = "/#{Array.new(rng.rand(0..5)) { parts.sample(random: rng) }.join("/")}"
      next unless LP::Lister.expanded?(path)

      agreed += 1
      assert_equal File.expand_path(path), path
    end
    assert_operator agreed, :>, 3000
    %w[/usr/lib/ruby/3.1.0 /home/u/.rbenv/versions/3.4.1/lib/ruby/gems/3.4.0/gems/rack-3.0.8/lib /a/...].each do |path|
      assert LP::Lister.expanded?(path), path
    end
    ["/usr/lib/", "/usr//lib", "/usr/./lib", "/usr/lib/..", "/", "lib", "./lib", "~/lib"].each do |path|
      refute LP::Lister.expanded?(path), path
    end
  end

  test "a load dir for a frozen, expanded item is one object: the item is its expanded path" do
    skip "no allocation counter on #{RUBY_ENGINE}" unless RUBY_ENGINE == "ruby"
    lister = LP::Lister.new(store: nil, roots: LP::Roots.new(["/gems"]), ignore: [], trust: nil)
    items = Array.new(50) { |i| "/gems/g#{i}/lib".freeze }
    lister.load_dir(items[0])
    before = GC.stat(:total_allocated_objects)
    dirs = items.map { |item| lister.load_dir(item) }
    made = GC.stat(:total_allocated_objects) - before
    assert_equal 1, (made - 1) / 50, "objects per dir (the Array of them aside)"
    assert_equal items, dirs.map(&:expanded)
    assert_equal [:stable], dirs.map(&:kind).uniq
    unfrozen = lister.load_dir(+"/gems/g1/lib")
    assert unfrozen.item.frozen?
    dotted = lister.load_dir("/gems/g1/x/../lib/")
    assert_equal ["/gems/g1/lib", :stable], [dotted.expanded, dotted.kind]
    relative = lister.load_dir("lib", "/gems/g1")
    assert_equal ["/gems/g1/lib", true, "lib"], [relative.expanded, relative.expanded.frozen?, relative.item]
  end

  # The ignore list a listing was made with is stamped in its header, compared in place.
  test "a stored listing decodes only under the stamp it was made with, in any encoding" do
    codec = LP::Codec
    raw = codec.encode("/q.so\0x", ["a.rb"], [""], [0], ["y"])
    assert_equal "/q.so\0x", codec.decode(raw, ["y"]).base
    assert codec.decode(raw, ["y"]).base.frozen?
    assert_equal "a.rb\0", codec.decode(raw.dup.force_encoding(Encoding::UTF_8), ["y"]).files
    assert_equal "/q.so\0x", codec.decode(raw, nil).base
    # The same length as the stored stamp, and found further on (in the base): not this stamp.
    assert_nil codec.decode(raw, ["x"])
    assert_nil codec.decode(raw.dup.force_encoding(Encoding::UTF_8), ["x"])
    assert_nil codec.decode(raw, ["yy"])
    assert_nil codec.decode(raw, [])
  end
end

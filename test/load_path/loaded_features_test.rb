# frozen_string_literal: true

require "test_helper"

class LoadPathLoadedFeaturesTest < Minitest::Test
  def with_features(list)
    lf = Loadout::LoadPath::LoadedFeatures.new # before the swap: autoloading it appends a feature
    saved = $LOADED_FEATURES.dup
    $LOADED_FEATURES.replace(list)
    yield lf
  ensure
    $LOADED_FEATURES.replace(saved)
  end

  test "a feature counts as loaded under any current item, or by its bare name" do
    lpaths = { "/lp" => true, "/" => true }
    with_features(["/lp/a/b.rb", "enumerator.so", "/other/c.rb", "/top.rb", "plain"]) do |lf|
      assert lf.maybe_loaded?("a/b", lpaths)
      assert lf.maybe_loaded?("enumerator", lpaths)
      assert lf.maybe_loaded?("top", lpaths)
      assert lf.maybe_loaded?("plain", lpaths)
      refute lf.maybe_loaded?("c", lpaths), "/other is not on the load path"
      refute lf.maybe_loaded?("b", lpaths)
    end
  end

  # rb_feature_p's rule, spelled out by brute force: the feature itself (with or without a known
  # extension), or "<entry>/<feature><known ext>" for an entry on the load path.
  def provided?(stem, features, lpaths)
    features.any? do |f|
      bare = f.sub(/\.(?:rb|so|o|bundle|dll)\z/, "")
      bare == stem || lpaths.keys.any? { |lp| bare == (lp == "/" ? "/#{stem}" : "#{lp}/#{stem}") }
    end
  end

  test "never says no where rb_feature_p would say yes, for odd paths and every suffix depth" do
    features = ["/a/b", "a/b/c.rb", "/lp/a/b/c/d.rb", "x", "/x.so", "a//b.rb", "", "/", "//", "a/", "x.y.rb",
                "/lp/a/b.c/d.so", "/lp/é/ü/x.rb", "/lp/deep/er/than/three/levels.bundle", "/lp/a.o", "/top.rb"]
    lpaths = { "/lp" => true, "/" => true, "/lp/deep" => true }
    stems = features.flat_map do |f|
      bare = f.sub(/\.(?:rb|so|o|bundle|dll)\z/, "")
      parts = bare.split("/", -1)
      (1..parts.size).map { |k| parts.last(k).join("/") }
    end.uniq + %w[nope b/c z/d levels than/three/levels er/than/three/levels]
    with_features(features) do |lf|
      stems.each do |stem|
        next unless provided?(stem, features, lpaths)

        assert lf.maybe_loaded?(stem, lpaths), "#{stem.inspect} is provided"
      end
      refute lf.maybe_loaded?("nope", lpaths)
      refute lf.maybe_loaded?("z/d", lpaths)
    end
  end

  test "appends are picked up by size, edits after stale!" do
    with_features([]) do |lf|
      refute lf.maybe_loaded?("x", { "/lp" => true })
      $LOADED_FEATURES << "/lp/x.rb"
      assert lf.maybe_loaded?("x", { "/lp" => true })
      $LOADED_FEATURES[0] = "/lp/y.rb"
      lf.stale!
      refute lf.maybe_loaded?("x", { "/lp" => true })
      assert lf.maybe_loaded?("y", { "/lp" => true })
    end
  end
end

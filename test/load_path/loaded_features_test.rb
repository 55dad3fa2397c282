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

  test "a feature counts as loaded under any current entry, or by its bare name" do
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

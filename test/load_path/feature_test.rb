# frozen_string_literal: true

require "test_helper"

class LoadPathFeatureTest < Minitest::Test
  Feature = Loadout::LoadPath::Feature

  test "plain names search .rb then DLEXT; explicit extensions restrict" do
    assert_equal ["foo/bar", Feature::RB_THEN_SO], Feature.parse("foo/bar")
    assert_equal ["foo/bar", Feature::RB], Feature.parse("foo/bar.rb")
    assert_equal ["foo/bar", Feature::SO], Feature.parse("foo/bar.so")
  end

  test "unknown extensions keep the whole name, like load.c" do
    assert_equal ["task.rake", Feature::RB_THEN_SO], Feature.parse("task.rake")
    assert_equal ["v1.2/x", Feature::RB_THEN_SO], Feature.parse("v1.2/x")
  end

  test "absolute, explicit relative and home paths are not searched" do
    %w[/abs/x ./x ../x ~/x ~user/x . ..].each { |f| assert_equal Feature::DIRECT, Feature.parse(f), f }
  end

  test "what the index cannot prove is a fallback reason" do
    assert_equal :not_string, Feature.parse(:sym)
    assert_equal :empty, Feature.parse("")
    assert_equal :dot_segment, Feature.parse("a/../b")
    assert_equal :dot_segment, Feature.parse("a/./b")
    assert_equal :dot_segment, Feature.parse("a//b")
    assert_equal :dot_segment, Feature.parse("a/")
    assert_equal :encoding, Feature.parse("caf\xE9".b)
    assert_equal :control_char, Feature.parse("a\nb")
    assert_equal :extension, Feature.parse("x.o")
  end

  test "load takes exact names only" do
    assert_equal ["x", Feature::RB], Feature.parse_exact("x.rb")
    assert_nil Feature.parse_exact("x")
    assert_nil Feature.parse_exact("x.rake")
  end
end

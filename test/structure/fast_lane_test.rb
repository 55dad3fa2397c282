# frozen_string_literal: true

require "test_helper"

# bin/test --fast runs the files test/fast_files names: each must exist (a renamed test would
# otherwise silently leave the lane), and none may be one of the suites that boot apps.
class FastLaneTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)

  test "test/fast_files names existing test files, none of the app-booting suites" do
    files = File.readlines(File.join(ROOT, "test/fast_files"), chomp: true).grep_v(/\A(#|\s*\z)/)
    assert_operator files.size, :>=, 30
    assert_empty files.reject { |f| f.end_with?("_test.rb") && File.file?(File.join(ROOT, f)) }, "missing files"
    assert_empty files.grep(%r{\Atest/(rails|integration|matrix|build)/|rails_fleet_test}), "app-booting suites"
    assert_equal files.uniq, files
  end
end

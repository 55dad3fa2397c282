# frozen_string_literal: true

require "test_helper"
require "fileutils"

class NativeTest < Minitest::Test
  test "LOADOUT_PURE picks the backend once at load time" do
    assert_equal ":native", run_ruby!('require "loadout"; print Loadout::BACKEND.inspect', env: { "LOADOUT_PURE" => "0" }).stdout
    %w[1 true yes TRUE].each do |value|
      assert_equal ":ruby", run_ruby!('require "loadout"; print Loadout::BACKEND.inspect', env: { "LOADOUT_PURE" => value }).stdout
    end
  end

  test "a bad LOADOUT_PURE value is a clear error naming the variable and the accepted values" do
    result = run_ruby('require "loadout"', env: { "LOADOUT_PURE" => "maybe" })
    refute result.success?
    assert_match(/LOADOUT_PURE: "maybe" is not accepted; use 1\/0\/true\/false\/yes\/no/, result.stderr)
  end

  test "without the compiled extension the gem works on the Ruby twins with one warning" do
    Dir.mktmpdir("loadout-nolib") do |dir|
      FileUtils.cp_r(Loadout::TestSupport::Subprocess::LIB, dir)
      Dir.glob(File.join(dir, "lib/loadout/*.{so,bundle}")).each { |f| File.delete(f) }
      script = 'require "loadout"; r = Loadout::Scan.call(ARGV[0]); print Loadout::BACKEND.inspect, " ", r.files.size'
      out, err, status = Open3.capture3({ "LOADOUT_PURE" => nil, "RUBYOPT" => nil }, RbConfig.ruby, "-I", File.join(dir, "lib"), "-e", script, File.join(dir, "lib"))
      assert status.success?, err
      assert_match(/\A:ruby \d+\z/, out)
      refute_equal 0, out.split.last.to_i
      assert_equal 1, err.lines.grep(/loadout: native extension unavailable/).size, err
    end
  end
end

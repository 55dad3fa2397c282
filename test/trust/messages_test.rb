# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# What a cache-dir warning prints: the path comes from the environment (LOADOUT_CACHE_DIR), so its
# bytes never reach the terminal as control sequences, and a path the system cannot take is
# called too long, not a danger.
class TrustMessagesTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  def boot_with_env(app, cache_dir)
    script = "require 'loadout/setup'\n#{PROGRAM.lines.grep_v(/Loadout.setup/).join}"
    run_with_deadline(clean_env("LOADOUT_CACHE_DIR" => cache_dir, "BUNDLE_GEMFILE" => File.join(app, "Gemfile"),
                                "T_APP" => app), [RbConfig.ruby, "-I", LIB, "-e", script], app)
  end

  test "control bytes of the cache dir (ANSI escapes) are escaped in the warning" do
    with_trust_app do |app, _|
      cache = File.join(app, "tmp", "\e[2J\e[31mcache\a\u009b1m")
      FileUtils.mkdir_p(cache)
      File.chmod(0o777, cache)
      boot = boot_with_env(app, cache)
      assert_equal 1, boot.warnings.size, boot.stderr
      warning = boot.warnings.first
      refute_match(/[\x00-\x09\x0b-\x1f\x7f]|\u009b/, warning, "raw control bytes reached the terminal")
      assert_includes warning, '\e[2J\e[31mcache\a\u009B1m'
      assert_includes warning, "is writable by others"
      assert_equal plain_stdout(app), boot.stdout
    end
  end

  test "a cache dir path too long for the system is called too long" do
    with_trust_app do |app, _|
      cache = File.join(app, "tmp", *(["d" * 200] * 300)) # 60 kB
      boot = boot_with_env(app, cache)
      assert_equal 1, boot.warnings.size, boot.stderr
      warning = boot.warnings.first
      assert_match(/is too long to use \(\d+ bytes; ENAMETOOLONG\)/, warning)
      assert_includes warning, "set LOADOUT_CACHE_DIR to a shorter path"
      refute_includes warning, "whoever can write there"
      assert_operator warning.bytesize, :<, 1000, "the warning shows the path's two ends, not 60 kB of it"
      assert_equal 0, boot.lfb
      assert_equal plain_stdout(app), boot.stdout
    end
  end

  test "Words.shown: plain paths as they are; control bytes, C1 controls and invalid UTF-8 escaped" do
    words = Loadout::Trust::Words
    assert_equal "/app/tmp/cache", words.shown("/app/tmp/cache")
    assert_equal "/app/tmp/caché", words.shown("/app/tmp/caché".b)
    assert_equal '"/a\e[31mb"', words.shown("/a\e[31mb")
    assert_equal '"/a\nb\tc"', words.shown("/a\nb\tc")
    assert_equal '"/a\u009Bb"', words.shown("/a\u009bb")
    assert_equal '"/a\xFFb"', words.shown("/a\xFFb".b)
    long = words.shown("/#{"x" * 5000}")
    assert_operator long.length, :<=, words::SHOWN_MAX + 3
    assert long.start_with?("/xxx") && long.include?("...")
  end
end

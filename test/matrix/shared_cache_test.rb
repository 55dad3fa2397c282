# frozen_string_literal: true

require "test_helper"
require_relative "../integration/app_helper"

# One cache dir used by two Rubies in turn (a project moving from 3.1 to 3.3, a CI matrix sharing
# a cache): each keeps its own entries, both boot warm, nothing is reported as broken. This Ruby
# (the host's) alternates with Ruby 3.3 from the Debian 13 root that `bin/test --ruby 3.3` builds
# (tmp/roots/ruby-3.3); the app sits at the same path for both (bin/roots LOADOUT_ROOT_SHARE).
# Run by `bin/test --shared-cache`, after `bin/test --ruby 3.3`.
class SharedCacheTest < Minitest::Test
  include Loadout::TestSupport::App

  ROOTS = File.expand_path("../../bin/roots", __dir__)

  def setup
    root_lib = File.expand_path("../../tmp/roots/ruby-3.3/loadout/lib/loadout", __dir__)
    assert Dir.glob("#{root_lib}/loadout_ext.*").any?,
           "no Ruby 3.3 root with a built loadout: run `bin/test --ruby 3.3` first"
  end

  # Boots the app with Ruby 3.3 inside the root (its own copy of loadout, built for 3.3).
  def boot_33(app, env = {})
    vars = clean_env(env).compact.map { |k, v| "#{k}=#{v}" }
    cmd = [ROOTS, "exec", "ruby-3.3", "env", "-C", app, *vars, "ruby", "-I", "/loadout/lib", "boot.rb"]
    out, err, status = Open3.capture3({ "LOADOUT_ROOT_SHARE" => File.dirname(app) }, *cmd, pgroup: true)
    wait_for_group(status.pid)
    Loadout::TestSupport::Subprocess::Result.new(out, err, status)
  end

  def boot_host(app, env = {})
    boot_app(app, env: env)
  end

  # [iseq, yaml, json] counters of a LOADOUT_STATS report: { kind => { "hits" => n, ... } }.
  def counters(stderr)
    stderr.lines.grep(/^\s+(iseq|yaml|json):\s+hits=/).to_h do |line|
      kind, rest = line.strip.split(":", 2)
      [kind, rest.scan(/(\w+)=(\d+)/).to_h { |k, v| [k, v.to_i] }]
    end
  end

  test "Ruby 3.1 and Ruby 3.3 alternating on one cache dir: each keeps its entries, both warm, no errors" do
    with_app do |app|
      rubies = { host: method(:boot_host), r33: method(:boot_33) }
      plain = rubies.transform_values { |boot| boot.call(app, "FIXTURE_WITHOUT_LOADOUT" => "1") }
      plain.each { |name, r| assert r.success?, "#{name} plain boot failed:\n#{r.stderr}" }
      # Two different Rubies, really.
      other, = Open3.capture2(ROOTS, "exec", "ruby-3.3", "ruby", "-e", "print RUBY_VERSION")
      assert_match(/\A3\.3\./, other)
      refute_equal RUBY_VERSION, other

      3.times do |round|
        rubies.each do |name, boot|
          result = boot.call(app, "LOADOUT_STATS" => "1")
          label = "#{name}, round #{round + 1}"
          assert result.success?, "#{label} failed:\n#{result.stderr}"
          assert_equal without_marker(plain[name].stdout), without_marker(result.stdout), label
          report = result.stderr.lines.grep_v(/^loadout stats|^\s{2}/)
          assert_empty loadout_lines(report.join), "#{label}: #{result.stderr}"
          stats = counters(result.stderr)
          assert_equal %w[iseq json yaml], stats.keys.sort, "#{label}: #{result.stderr}"
          $stderr.puts label, result.stderr.lines.grep(/hits=/)
          next if round.zero?

          # Warm: served from the cache, even though the other Ruby booted from it in between.
          stats.each do |kind, c|
            assert_equal 0, c["misses"], "#{label}: #{kind} missed\n#{result.stderr}"
            assert_equal 0, c["corrupt"], "#{label}: #{kind} corrupt\n#{result.stderr}"
            assert_equal 0, c["stale"], "#{label}: #{kind} stale\n#{result.stderr}"
            assert_operator c["hits"] + c["revalidated"], :>, 0, "#{label}: #{kind} served nothing"
          end
        end
      end
    end
  end
end

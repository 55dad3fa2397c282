# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# Requiring a file of loadout's does nothing but define it, except for the entry points whose
# purpose is to act: loadout/setup (sets up from the environment), loadout/rake (patches Rake's
# FileTask) and loadout/rake_tasks (defines Rake tasks), and the prelude's two programs, which no
# require of loadout's reaches (loadout/prelude/rubygems.rb, loaded by Ruby's prelude from the
# copy `loadout prelude` makes; loadout/prelude/record.rb, which that command runs). Proven in a
# child that requires every other file, from a directory of its own, and compares what a boot
# would change.
class RequireSideEffectsTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  LIB_DIR = File.expand_path("../../lib", __dir__)
  ENTRY_POINTS = %w[loadout/setup.rb loadout/rake.rb loadout/rake_tasks.rb
                    loadout/prelude/rubygems.rb loadout/prelude/record.rb].freeze

  # (rake_memo.rb requires Rake itself, whose DSL extends the main object; rake_memo/ holds its parts.)
  def quiet_files
    Dir.chdir(LIB_DIR) { Dir["loadout.rb"] + Dir["loadout/**/*.rb"] }
       .reject { |f| ENTRY_POINTS.include?(f) || f.start_with?("loadout/rake_memo") }.sort
  end

  SCRIPT = <<~'RUBY'
    snapshot = lambda do
      {
        load_path: $LOAD_PATH.dup,
        kernel: [Kernel, Kernel.singleton_class].map { |m| (m.private_instance_methods(false) + m.public_instance_methods(false)).sort.map { |n| [n, m.instance_method(n).source_location] } },
        kernel_ancestors: Kernel.singleton_class.ancestors.map(&:to_s),
        object_ancestors: Object.ancestors.map(&:to_s),
        iseq_hooks: RubyVM::InstructionSequence.singleton_class.ancestors.map(&:to_s),
        env: ENV.to_h,
        verbose: $VERBOSE,
        encodings: [Encoding.default_external, Encoding.default_internal],
        trace: Warning.singleton_class.ancestors.map(&:to_s),
      }
    end
    before = snapshot.call
    ARGV.each { |f| require File.join(LIB_DIR, f) }
    after = snapshot.call
    changed = before.keys.reject { |k| before[k] == after[k] }
    puts "changed: #{changed.join(",")}"
    puts "set up: #{Loadout::Boot.config.inspect}" if Loadout.autoload?(:Boot).nil?
  RUBY

  test "every file but the entry points can be required without changing the process or the disk" do
    files = quiet_files
    assert_operator files.size, :>, 80, "the walk found loadout's files"
    Dir.mktmpdir("loadout-quiet") do |dir|
      env = { "RUBYOPT" => nil, "LOADOUT_STATS" => "1", "LOADOUT_LOG" => "1" }
      r = run_ruby("LIB_DIR = #{LIB_DIR.dump}\n#{SCRIPT}", args: files, chdir: dir, env: env)
      assert r.success?, r.stderr
      assert_equal "", r.stderr, "nothing printed, at exit either"
      assert_includes r.stdout, "changed: \n"
      refute_match(/set up: (?!nil)/, r.stdout)
      assert_empty Dir.children(dir), "nothing written"
    end
  end

  test "the check notices an entry point" do
    Dir.mktmpdir("loadout-quiet") do |dir|
      File.write(File.join(dir, "Gemfile"), "")
      env = { "RUBYOPT" => nil, "BUNDLE_GEMFILE" => File.join(dir, "Gemfile") }
      r = run_ruby("LIB_DIR = #{LIB_DIR.dump}\n#{SCRIPT}", args: ["loadout/setup.rb"], chdir: dir, env: env)
      assert r.success?, r.stderr
      refute_includes r.stdout, "changed: \n", "setting up changes Kernel's require and the ISeq hooks"
      refute_empty Dir.children(dir) - ["Gemfile"], "setting up writes the cache"
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"
require "support/ruby_facts"

class CompileCacheISeqBinaryTest < Minitest::Test
  ISeqBinary = Loadout::CompileCache::ISeqBinary

  SOURCE = <<~'RUBY'
    def fail_here
      raise "x"
    end
    HERE = __FILE__
    [1].each do
      begin
        fail_here
      rescue => e
        $trace = [e.backtrace.first(2), caller_locations(0).first(2).map { |l| [l.path, l.label] }]
      end
    end
    $dir = __dir__
  RUBY

  def setup
    skip "ISeq caching is CRuby only" unless Loadout::CompileCache.supported?(:iseq)
  end

  def run_loaded(iseq)
    $trace = $dir = nil
    Object.send(:remove_const, :HERE) if Object.const_defined?(:HERE)
    iseq.eval
    [HERE, $dir, $trace]
  end

  test "labels become Ruby's own for required files, and the path moves to the new checkout" do
    with_files([["one/f.rb", SOURCE], ["two/f.rb", SOURCE]]) do |dir|
      one = File.join(dir, "one/f.rb")
      two = File.join(dir, "two/f.rb")
      binary = ISeqBinary.rewrite(RubyVM::InstructionSequence.compile_file(one).to_binary, {}, labels: true)
      moved = ISeqBinary.rewrite(binary, { one => two })
      iseq = RubyVM::InstructionSequence.load_from_binary(moved)
      assert_equal [two, two, "<top (required)>"], [iseq.path, iseq.absolute_path, iseq.label]

      # What Ruby itself shows for that file loaded from source (backtrace labels differ between
      # versions: 3.4 writes 'Object#fail_here' where 3.3 wrote `fail_here').
      load two
      own = $trace
      Object.send(:remove_const, :HERE)
      Object.send(:remove_method, :fail_here)
      assert_match(/fail_here/, own[0][0])

      here, found_dir, trace = run_loaded(iseq)
      assert_equal two, here
      assert_equal File.dirname(two), found_dir
      assert_equal own[0], trace[0]
      assert_equal own[1], trace[1]
      assert_equal [two, two], trace[1].map(&:first)
    end
  ensure
    Object.send(:remove_const, :HERE) if Object.const_defined?(:HERE)
    Object.send(:remove_method, :fail_here) if Object.private_method_defined?(:fail_here)
  end

  test "a binary with nothing to replace comes back unchanged; a foreign one is refused" do
    binary = RubyVM::InstructionSequence.compile("1 + 1").to_binary
    assert_same binary, ISeqBinary.rewrite(binary, { "/nowhere.rb" => "/elsewhere.rb" })
    assert_nil ISeqBinary.rewrite("YARB#{"\0" * 40}", {})
    assert_nil ISeqBinary.rewrite(binary.byteslice(0, binary.bytesize - 1), {})
  end

  test "a user string that merely contains the path is left alone" do
    with_files([["a/x.rb", "$s = 'prefix:' + 'tail'\n"]]) do |dir|
      path = File.join(dir, "a/x.rb")
      File.write(path, "$s = #{"#{path}:3".dump}\n")
      moved = ISeqBinary.rewrite(RubyVM::InstructionSequence.compile_file(path).to_binary, { path => "/b/x.rb" })
      RubyVM::InstructionSequence.load_from_binary(moved).eval
      assert_equal "#{path}:3", $s
    end
  end

  # Whether relocation may move a binary: the native scan and its Ruby twin give the same answer
  # on each case (guards the native ibf_mentioned_outside against its twin and both against the
  # layout: a path folded into a longer literal pins the entry, a whole-object one does not).
  test "a path mentioned inside a longer literal is found, a path that is a whole object is not, on both backends" do
    cases = {
      "$h = __FILE__\n" => false, # the path object itself
      "$d = __dir__\n" => false,
      # parse.y folds it into one literal "<path>:1"; Prism (3.4's default parser) does not.
      "$s = \"\#{__FILE__}:1\"\n" => Loadout::TestSupport::RubyFacts.folds_file_into_literals?,
      "$s = 'x'\n" => false,
    }
    with_files([["m/x.rb", ""]]) do |dir|
      path = File.join(dir, "m/x.rb")
      cases.each do |source, expected|
        File.write(path, source)
        iseq = RubyVM::InstructionSequence.compile_file(path)
        binary = iseq.to_binary
        paths = [iseq.path, iseq.absolute_path.to_s]
        assert_equal expected, ISeqBinary.ruby_mentioned_outside_objects?(binary, paths), "ruby twin: #{source}"
        next unless Loadout::BACKEND == :native

        assert_equal expected, ISeqBinary.mentioned_outside_objects?(binary, paths), "native: #{source}"
        assert_equal expected, paths.uniq.any? { |p| Loadout::Native.ibf_mentioned_outside(binary, p) }, source
      end
      assert Loadout::Native.ibf_mentioned_outside("YARB", path) if Loadout::BACKEND == :native # unparsable: pinned
    end
  end
end

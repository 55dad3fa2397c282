# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"
require "loadout/compile_cache/iseq_binary"

# Native.ibf_relocate (the self cache's relocation, in C because it runs before any of loadout's
# Ruby is loaded) against its twin, ISeqBinary.rewrite: the same bytes, on every file of lib/.
class IbfRelocateTest < Minitest::Test
  LIB = File.expand_path("../../lib", __dir__)

  def setup
    skip "the native backend's" unless Loadout::BACKEND == :native
  end

  test "ibf_relocate writes the bytes ISeqBinary.rewrite writes, and the result loads at the new path" do
    files = Dir.glob("#{LIB}/**/*.rb").sort
    assert_operator files.size, :>, 50
    files.each do |file|
      binary = RubyVM::InstructionSequence.compile_file(file).to_binary
      to = "/elsewhere/#{"deep/" * 40}#{File.basename(file)}" # a length that needs a longer "small value"
      pairs = [[file, to], ["<main>", "<top>"]]
      relocated = Loadout::Native.ibf_relocate(binary, pairs)
      assert_equal Loadout::CompileCache::ISeqBinary.rewrite(binary, pairs.to_h), relocated, file
      iseq = RubyVM::InstructionSequence.load_from_binary(relocated)
      assert_equal to, iseq.path
      assert_equal to, iseq.absolute_path
    end
  end

  test "nothing to replace: the binary itself; not an IBF, a truncated one: nil; bad pairs raise" do
    binary = RubyVM::InstructionSequence.compile("x = 1").to_binary
    assert_same binary, Loadout::Native.ibf_relocate(binary, [["/nowhere.rb", "/x.rb"]])
    assert_nil Loadout::Native.ibf_relocate("YARB#{"\0" * 40}", [])
    assert_nil Loadout::Native.ibf_relocate(binary.byteslice(0, binary.bytesize - 1), [])
    assert_nil Loadout::Native.ibf_relocate("", [])
    assert_raises(ArgumentError) { Loadout::Native.ibf_relocate(binary, [["/a"]]) }
    assert_raises(ArgumentError) { Loadout::Native.ibf_relocate(binary, [[:a, "/b"]]) }
    assert_raises(TypeError) { Loadout::Native.ibf_relocate(binary, "/a") }
  end

  test "a path given twice is replaced once" do
    file = File.join(LIB, "loadout/version.rb")
    binary = RubyVM::InstructionSequence.compile_file(file).to_binary
    once = Loadout::Native.ibf_relocate(binary, [[file, "/a/version.rb"]])
    assert_equal once, Loadout::Native.ibf_relocate(binary, [[file, "/a/version.rb"], [file, "/b/version.rb"]])
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/differential"

# .rb against DLEXT: a real extension is compiled once (mkmf) and copied into the trees.
class RequireExtensionTest < Minitest::Test
  include Loadout::TestSupport::Differential

  DLEXT = RbConfig::CONFIG["DLEXT"]

  def self.built_extension
    @built_extension ||= begin
      dir = Dir.mktmpdir("loadout-ext")
      Minitest.after_run { FileUtils.rm_rf(dir) }
      File.write("#{dir}/dual.c", <<~C)
        #include <ruby.h>
        void Init_dual(void) { rb_funcall(rb_mKernel, rb_intern("puts"), 1, rb_str_new_cstr("dual.so")); }
      C
      File.write("#{dir}/extconf.rb", "require 'mkmf'\ncreate_makefile('dual')\n")
      out, status = Open3.capture2e(RbConfig.ruby, "extconf.rb", chdir: dir)
      out2, status2 = Open3.capture2e("make", chdir: dir) if status.success?
      so = "#{dir}/dual.#{DLEXT}"
      unless status.success? && status2&.success? && File.exist?(so)
        raise "could not build the test extension:\n#{out}\n#{out2}"
      end

      so
    end
  end

  def with_ext_tree(rb_dirs:, so_dirs:, extra: [])
    files = rb_dirs.map { |d| ["#{d}/dual.rb", "puts 'dual.rb in #{d}'"] } + extra
    with_files(files) do |dir|
      so_dirs.each do |d|
        FileUtils.mkdir_p("#{dir}/#{d}")
        FileUtils.cp(self.class.built_extension, "#{dir}/#{d}/dual.#{DLEXT}")
      end
      yield dir
    end
  end

  # Ruby 3.1 tries x.rb in every entry before x.so in any (load.c rb_find_file_ext); after one
  # of them is loaded, the other name is handed to Ruby (it may count as provided), hence 1 hit.
  test ".rb beats the extension in the same item" do
    with_ext_tree(rb_dirs: ["a"], so_dirs: ["a"]) do |dir|
      _, with = assert_same_behaviour(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a")
        check(:plain) { require "dual" }
        check(:so) { require "dual.so" }
      RUBY
      assert_equal "dual.rb in a\ndual.so\n", with.stdout
      assert_index_used(with, hits: 1)
    end
  end

  test ".rb in a later item beats an extension in an earlier one" do
    with_ext_tree(rb_dirs: ["b"], so_dirs: ["a"]) do |dir|
      _, with = assert_same_behaviour(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        check(:plain) { require "dual" }
        check(:rb) { require "dual.rb" }
        check(:again) { require "dual" }
      RUBY
      assert_equal "dual.rb in b\n", with.stdout
      assert_index_used(with, hits: 1)
    end
  end

  test "explicit .rb and .so only look for that kind" do
    with_ext_tree(rb_dirs: ["a"], so_dirs: ["b"]) do |dir|
      _, with = assert_same_behaviour(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        check(:so) { require "dual.so" }
        check(:rb) { require "dual.rb" }
        check(:bare) { require "dual" }
        check(:o) { require "dual.o" }
      RUBY
      assert_equal "dual.so\ndual.rb in a\n", with.stdout
      assert_index_used(with, hits: 1)
    end
  end
end

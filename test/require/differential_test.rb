# frozen_string_literal: true

require "test_helper"
require "support/differential"

# Each test runs one script in plain Ruby and with the load path index, and compares stdout,
# return values, exceptions (class, message, #path) and $LOADED_FEATURES.
class RequireDifferentialTest < Minitest::Test
  include Loadout::TestSupport::Differential

  # Every scenario must also have gone through the index at least once.
  def same(script, hits: 1, **kw)
    plain, with = assert_same_behaviour(script, **kw)
    assert_index_used(with, hits: hits)
    [plain, with]
  end

  test "shadowing across items: the first item holding the feature wins" do
    files = [["a/x.rb", "puts 'a/x'"], ["b/x.rb", "puts 'b/x'"], ["b/y.rb", "puts 'b/y'"],
             ["c/y.rb", "puts 'c/y'"], ["a/deep/z.rb", "puts 'a/deep/z'"], ["b/deep/z.rb", "puts 'b/deep/z'"]]
    with_files(files) do |dir|
      _, with = same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/c", "#{dir}/b", "#{dir}/a")
        check(:x) { require "x" }
        check(:y) { require "y" }
        check(:z) { require "deep/z" }
        check(:again) { require "x" }
      RUBY
      assert_equal "b/x\nc/y\nb/deep/z\n", with.stdout
    end
  end

  test "require returns true then false, also through Kernel.require and with explicit .rb" do
    with_files([["a/t.rb", "puts 't'"], ["a/u.rb", "puts 'u'"]]) do |dir|
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a")
        check(1) { require "t" }
        check(2) { require "t" }
        check(3) { require "t.rb" }
        check(4) { Kernel.require "u.rb" }
        check(5) { Kernel.require "u" }
        check(6) { require "#{dir}/a/t.rb" }
        check(7) { require_relative "#{dir}/a/u" }
      RUBY
    end
  end

  test "LoadError message and path for missing features, through every entry point" do
    with_files([["a/nested.rb", "require 'inner_missing'"], ["a/x.rake", "puts 'rake'"]]) do |dir|
      _, with = same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a")
        check(:missing) { require "definitely_missing" }
        check(:missing_rb) { require "definitely_missing.rb" }
        check(:missing_so) { require "definitely_missing.so" }
        check(:module_fn) { Kernel.require "definitely_missing" }
        check(:nested) { require "nested" }
        check(:unknown_ext) { require "x.rake" }
        check(:dir_slash) { require "a/" }
        check(:empty) { require "" }
        check(:not_a_string) { require 42 }
        check(:missing_again) { require "definitely_missing" }
      RUBY
      assert_includes with.steps, [:missing, :raise, "LoadError", "cannot load such file -- definitely_missing",
                                   "definitely_missing"]
    end
  end

  test "features with dots, unknown extensions and .. segments" do
    files = [["a/foo.bar.rb", "puts 'foo.bar'"], ["a/task.rake.rb", "puts 'task.rake.rb'"],
             ["a/sub/q.rb", "puts 'q'"], ["a/r.rb", "puts 'r'"], ["b/r.rb", "puts 'b/r'"], ["a/v1.2/w.rb", "puts 'w'"]]
    with_files(files) do |dir|
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/b", "#{dir}/a")
        check(:dots) { require "foo.bar" }
        check(:rake) { require "task.rake" }
        check(:dotdot) { require "sub/../r" }
        check(:dotdir) { require "v1.2/w" }
        check(:dot) { require "sub/./q" }
      RUBY
    end
  end

  test "a directory named x.rb is not a file" do
    with_files([["a/x.rb/", nil], ["a/x.rb/inner.rb", "puts 'inner'"], ["b/x.rb", "puts 'b/x'"], ["a/y.rb/"]]) do |dir|
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        check(:x) { require "x" }
        check(:inner) { require "x.rb/inner" }
        check(:y) { require "y" }
        check(:load_dir) { load "y.rb" }
      RUBY
    end
  end

  test "symlinked files and directories, broken links" do
    with_files([["real/y.rb", "puts 'real y'"], ["real/z.rb", "puts 'real z'"], ["a/"]]) do |dir|
      File.symlink("#{dir}/real/y.rb", "#{dir}/a/link.rb")
      File.symlink("#{dir}/real", "#{dir}/a/dirlink")
      File.symlink("#{dir}/nowhere.rb", "#{dir}/a/broken.rb")
      File.symlink("#{dir}/real", "#{dir}/lp_link")
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/lp_link")
        check(:link) { require "link" }
        check(:same_realpath) { require "y" }
        check(:dirlink) { require "dirlink/z" }
        check(:z_again) { require "z" }
        check(:broken) { require "broken" }
      RUBY
    end
  end

  test "features found through a symlinked $LOAD_PATH item are recorded under its realpath" do
    files = [["real/lib/sy.rb", "puts __FILE__"], ["real/lib/deep/sz.rb", "puts __FILE__"],
             ["other/sy.rb", "puts 'other'"]]
    with_files(files) do |dir|
      File.symlink("#{dir}/real", "#{dir}/current")
      File.symlink("#{dir}/real/lib", "#{dir}/lib_link")
      _, with = same(<<~RUBY, hits: 2)
        $LOAD_PATH.unshift("#{dir}/current/lib", "#{dir}/other")
        check(:sy) { require "sy" }
        check(:deep) { require "deep/sz" }
        $LOAD_PATH.unshift("#{dir}/lib_link")
        check(:again) { require "sy" }
        check(:features) { $LOADED_FEATURES.grep(/sy|sz/) }
      RUBY
      assert_includes with.stdout, "#{dir}/real/lib/sy.rb"
    end
  end

  test "relative items and Dir.chdir during boot" do
    files = [["one/lib/r1.rb", "puts 'one r1'"], ["one/lib/r2.rb", "puts 'one r2'"],
             ["two/lib/r2.rb", "puts 'two r2'"], ["two/lib/r3.rb", "puts 'two r3'"], ["one/dot.rb", "puts 'dot'"]]
    with_files(files) do |dir|
      same(<<~RUBY, chdir: "#{dir}/one")
        $LOAD_PATH.unshift("lib", ".")
        check(:r1) { require "r1" }
        check(:dot) { require "dot" }
        Dir.chdir("#{dir}/two")
        check(:r2) { require "r2" }
        check(:r3) { require "r3" }
        check(:r1_again) { require "r1" }
        check(:dot_gone) { require "dot" }
      RUBY
    end
  end

  test "Pathname and empty $LOAD_PATH items" do
    files = [["a/pn.rb", "puts 'a/pn'"], ["b/pn.rb", "puts 'b/pn'"], ["b/other.rb", "puts 'other'"],
             ["c/first.rb", "puts 'first'"]]
    with_files(files) do |dir|
      same(<<~RUBY)
        require "pathname"
        $LOAD_PATH.unshift("#{dir}/c", "", Pathname.new("#{dir}/a"), "#{dir}/b")
        check(:first) { require "first" }
        check(:pn) { require "pn" }
        check(:other) { require "other" }
      RUBY
    end
  end

  test "unicode and non-UTF-8 file names" do
    with_files([["a/ünïcödé.rb", "puts 'unicode'"], ["a/日本/語.rb", "puts 'cjk'"]]) do |dir|
      File.binwrite("#{dir}/a/bad\xFF.rb".b, "puts 'binary name'")
      # Features that are not ASCII go to Ruby: the test is that nothing differs.
      _, with = assert_same_behaviour(<<~'RUBY'.gsub("DIR", dir))
        $LOAD_PATH.unshift("DIR/a")
        check(:unicode) { require "ünïcödé" }
        check(:cjk) { require "日本/語" }
        check(:binary) { require "bad\xFF".b }
        check(:binary_missing) { require "bad\xFE".b }
        check(:latin1) { require "ünïcödé".encode("ISO-8859-1") }
      RUBY
      assert_equal({ encoding: 5 }, with.stats[:fallback_reasons])
    end
  end

  test "prepending a path holding another a.rb after a was required does not reload it" do
    with_files([["old/a.rb", "puts 'old a'"], ["new/a.rb", "puts 'new a'"], ["new/b.rb", "puts 'new b'"]]) do |dir|
      _, with = same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/old")
        check(:first) { require "a" }
        $LOAD_PATH.unshift("#{dir}/new")
        check(:prepended) { require "a" }
        check(:explicit) { require "a.rb" }
        $LOAD_PATH.delete("#{dir}/old")
        check(:old_gone) { require "a" }
      RUBY
      assert_equal "old a\nnew a\n", with.stdout
    end
  end

  test "every $LOAD_PATH mutation method mid-boot" do
    dirs = (0..5).map { |i| "d#{i}" }
    steps = %w[push append << concat unshift prepend insert []= delete delete_at delete_if reject! select! filter!
               keep_if replace fill map! collect! compact! flatten! uniq! reverse! rotate! sort! sort_by! shuffle!
               slice! pop shift clear]
    files = dirs.flat_map { |d| steps.each_index.map { |k| ["#{d}/s#{k}.rb", "puts '#{d} s#{k}'"] } }
    with_files(files) do |root|
      lp = dirs.map { |d| "#{root}/#{d}".dump }
      mutate = {
        "push" => "$LOAD_PATH.push(#{lp[5]})", "append" => "$LOAD_PATH.append(#{lp[4]})",
        "<<" => "$LOAD_PATH << #{lp[3]}", "concat" => "$LOAD_PATH.concat([#{lp[2]}, #{lp[1]}])",
        "unshift" => "$LOAD_PATH.unshift(#{lp[5]})", "prepend" => "$LOAD_PATH.prepend(#{lp[4]}, #{lp[3]})",
        "insert" => "$LOAD_PATH.insert(1, #{lp[2]})", "[]=" => "$LOAD_PATH[0] = #{lp[1]}",
        "delete" => "$LOAD_PATH.delete(#{lp[1]})", "delete_at" => "$LOAD_PATH.delete_at(0)",
        "delete_if" => "$LOAD_PATH.delete_if { |p| p == #{lp[3]} }",
        "reject!" => "$LOAD_PATH.reject! { |p| p == #{lp[4]} }",
        "select!" => "$LOAD_PATH.select! { |p| p != #{lp[2]} }",
        "filter!" => "$LOAD_PATH.filter! { |p| p != #{lp[5]} }",
        "keep_if" => "$LOAD_PATH.keep_if { |p| true }; $LOAD_PATH.unshift(#{lp[0]}, #{lp[3]})",
        "replace" => "$LOAD_PATH.replace([#{lp[4]}, #{lp[2]}] + $LOAD_PATH)",
        "fill" => "$LOAD_PATH.push(nil, nil); $LOAD_PATH.fill(#{lp[1]}, -2)",
        "map!" => "$LOAD_PATH.map! { |p| p == #{lp[4]} ? #{lp[5]} : p }",
        "collect!" => "$LOAD_PATH.collect! { |p| p == #{lp[5]} ? #{lp[0]} : p }",
        "compact!" => "$LOAD_PATH.unshift(nil); $LOAD_PATH.compact!",
        "flatten!" => "$LOAD_PATH.unshift([#{lp[3]}]); $LOAD_PATH.flatten!",
        "uniq!" => "$LOAD_PATH.unshift(#{lp[2]}); $LOAD_PATH.uniq!",
        "reverse!" => "$LOAD_PATH.reverse!", "rotate!" => "$LOAD_PATH.rotate!(2)",
        "sort!" => "$LOAD_PATH.sort!", "sort_by!" => "$LOAD_PATH.sort_by! { |p| p.reverse }",
        "shuffle!" => "$LOAD_PATH.shuffle!(random: Random.new(7))",
        "slice!" => "$LOAD_PATH.slice!(0, 2)", "pop" => "$LOAD_PATH.push(#{lp[1]}); $LOAD_PATH.pop",
        "shift" => "$LOAD_PATH.shift", "clear" => "$LOAD_PATH.clear; $LOAD_PATH.push(#{lp[2]})"
      }
      script = +"$LOAD_PATH.unshift(#{lp[0..2].join(", ")})\n"
      steps.each_with_index do |name, k|
        script << "#{mutate.fetch(name)}\ncheck(#{name.dump}) { require \"s#{k}\" }\n"
      end
      _, with = same(script)
      assert_equal steps.size, with.stdout.lines.size, "every step must have loaded one file:\n#{with.stdout}"
    end
  end

  test "$LOADED_FEATURES push, delete, replace and clear by hand" do
    with_files([["a/p.rb", "puts 'p'"], ["a/q.rb", "puts 'q'"], ["a/r.rb", "puts 'r'"]]) do |dir|
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a")
        $LOADED_FEATURES.push("#{dir}/a/p.rb")
        check(:pushed) { require "p" }
        $LOADED_FEATURES.delete("#{dir}/a/p.rb")
        check(:deleted) { require "p" }
        $LOADED_FEATURES << "q.rb"
        check(:relative_pushed) { require "q" }
        $LOADED_FEATURES.replace($LOADED_FEATURES - ["q.rb"])
        check(:replaced) { require "q" }
        $LOADED_FEATURES << "r"
        check(:bare) { require "r" }
        saved = $LOADED_FEATURES.dup
        $LOADED_FEATURES.clear
        check(:cleared) { require "p" }
        $LOADED_FEATURES.replace(saved)
      RUBY
    end
  end

  # The hook remembers where in $LOADED_FEATURES each loaded .rb file is (it answers "loaded"
  # without Ruby's walk of the load path when the file the index finds first is there): edits in
  # place, at the same index and of the same length, and entries of other kinds pushed after the
  # file loaded must change its answer exactly as they change Ruby's.
  test "$LOADED_FEATURES edited in place after the hook answered from it" do
    with_files([["a/m1.rb", "puts 'm1'"], ["a/m2.rb", "puts 'm2'"], ["a/n.rb", "puts 'n'"], ["a/o.rb", "puts 'o'"],
                ["b/m1.rb", "puts 'b/m1'"]]) do |dir|
      _, with = same(<<~RUBY, hits: 4)
        $LOAD_PATH.unshift("#{dir}/a")
        check(:m1) { require "m1" }
        check(:m2) { require "m2" }
        check(:n) { require "n" }
        check(:o) { require "o" }
        check(:m1_again) { require "m1" }
        i = $LOADED_FEATURES.index("#{dir}/a/m1.rb")
        $LOADED_FEATURES[i] = "#{dir}/a/m2.rb" # same length, other file: m1 is no longer loaded
        check(:m1_replaced) { require "m1" }
        check(:m2_twice_listed) { require "m2" }
        $LOADED_FEATURES[$LOADED_FEATURES.index("#{dir}/a/n.rb")] = "#{dir}/a/n.so"
        check(:n_as_so) { require "n" }
        check(:n_rb) { require "n.rb" }
        $LOADED_FEATURES << "#{dir}/a/o.so"
        check(:o_with_so_after) { require "o" }
        $LOADED_FEATURES.insert(0, "#{dir}/b/m1.rb")
        $LOAD_PATH.unshift("#{dir}/b")
        check(:m1_shadowed_and_listed) { require "m1" }
        $LOADED_FEATURES.shift
        check(:m1_shadowed) { require "m1" }
        $LOADED_FEATURES.pop(2)
        check(:popped) { [require("o"), require("n")] }
      RUBY
      assert_equal "m1\nm2\nn\no\nm1\n", with.stdout.lines.first(5).join
    end
  end

  # The hook answers "already loaded" itself only where Ruby's search stops at its loaded-features
  # check: these are the shapes where it must not (an extension of the same name is loaded, a
  # feature is being loaded) or where the check is by extension.
  test "already loaded: by extension, extension-only names, and explicit extensions" do
    files = [["a/e.rb", "puts 'e.rb'"], ["a/f.rb", "puts 'f.rb'"], ["a/g.rb", "puts 'g.rb'"], ["a/h.rb", "puts 'h.rb'"]]
    with_files(files) do |dir|
      _, with = same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a")
        # As if an extension e.so were loaded: Ruby still looks for e.rb, and loads it.
        $LOADED_FEATURES << "#{dir}/a/e.so"
        check(:so_loaded_rb_exists) { require "e" }
        check(:again) { require "e" }
        check(:explicit_so) { require "e.so" }
        check(:explicit_rb) { require "e.rb" }
        check(:f) { require "f.rb" }
        check(:f_bare) { require "f" }
        check(:f_so) { require "f.so" }
        $LOADED_FEATURES << "#{dir}/a/g.so"
        check(:g_so) { require "g.so" }
        check(:g_bare) { require "g" }
        # A real extension (no .rb of its name anywhere): "already loaded", however asked.
        check(:ext) { require "strscan" }
        check(:ext_again) { require "strscan" }
        check(:ext_so) { require "strscan.so" }
        # A bare entry with no file behind it, and one with a .rb behind it.
        $LOADED_FEATURES << "nothing_here"
        check(:bare_nothing) { require "nothing_here" }
        $LOADED_FEATURES << "h"
        check(:bare_h) { require "h" }
      RUBY
      assert_equal "e.rb\nf.rb\ng.rb\nh.rb\n", with.stdout
    end
  end

  test "a circular require warns and returns false as in plain Ruby (-w)" do
    with_files([["a/circ_a.rb", "puts 'a'; require 'circ_b'; puts 'a done'"],
                ["a/circ_b.rb", "puts 'b'; p require('circ_a'); p require('circ_a.rb')"]]) do |dir|
      plain, with = assert_same_behaviour(<<~RUBY, ruby_opts: ["-w"])
        $LOAD_PATH.unshift("#{dir}/a")
        check(:circular) { require "circ_a" }
      RUBY
      assert_index_used(with, hits: 1)
      warning = /loading in progress, circular require considered harmful/
      assert_equal plain.stderr.scan(warning).size, with.stderr.scan(warning).size, with.stderr
      assert_operator with.stderr.scan(warning).size, :>=, 1, with.stderr
    end
  end

  test "builtin and preloaded features behave as in plain Ruby" do
    same(<<~RUBY, hits: 0)
      %w[enumerator thread fiber rational complex ruby2_keywords enumerator.so thread.rb rbconfig].each do |f|
        check(f) { require f }
      end
    RUBY
  end

  test "autoload through Module#autoload and Kernel#autoload uses the same rules" do
    with_files([["a/auto_one.rb", "AutoOne = :a"], ["b/auto_one.rb", "AutoOne = :b"],
                ["b/auto_two.rb", "module Ns; AutoTwo = :b; end"], ["a/auto_three.rb", "AutoThree = :a"]]) do |dir|
      same(<<~RUBY)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        autoload :AutoOne, "auto_one"
        module Ns; autoload :AutoTwo, "auto_two"; end
        Object.autoload :AutoThree, "auto_three.rb"
        autoload :AutoMissing, "auto_missing"
        check(:one) { AutoOne }
        check(:two) { Ns::AutoTwo }
        check(:three) { AutoThree }
        check(:missing) { AutoMissing }
      RUBY
    end
  end

  # load is Ruby's own (only require's search is answered by the index): unchanged.
  test "load searches $LOAD_PATH for plain relative names and falls back to the cwd" do
    with_files([["a/l.rb", "puts 'a/l'"], ["b/l.rb", "puts 'b/l'"], ["cwd/l.rb", "puts 'cwd/l'"],
                ["cwd/only_here.rb", "puts 'only here'"], ["a/w.rb", "puts self.inspect"]]) do |dir|
      assert_same_behaviour(<<~RUBY, chdir: "#{dir}/cwd")
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        check(:lp) { load "l.rb" }
        check(:twice) { load "l.rb" }
        check(:explicit) { load "./l.rb" }
        check(:cwd) { load "only_here.rb" }
        check(:no_ext) { load "l" }
        check(:wrap) { load "w.rb", true }
        check(:module_fn) { Kernel.load "l.rb" }
        check(:missing) { load "nope.rb" }
      RUBY
    end
  end

  test "a file removed after the index was built is not loaded and gives Ruby's LoadError" do
    with_files([["a/gone.rb", "puts 'gone'"], ["b/gone.rb", "puts 'b gone'"]]) do |dir|
      before = -> { FileUtils.mkdir_p("#{dir}/a"); File.write("#{dir}/a/gone.rb", "puts 'gone'") }
      same(<<~RUBY, before_each: before)
        $LOAD_PATH.unshift("#{dir}/a", "#{dir}/b")
        # Build the index while the file exists (only when loadout is on: no autoload in plain).
        Loadout::LoadPath.find("gone") if $LOADED_FEATURES.any? { |f| f.end_with?("loadout/load_path.rb") }
        File.delete("#{dir}/a/gone.rb")
        check(:gone) { require "gone" }
      RUBY
    end
  end

  test "threads requiring the same features concurrently load each once" do
    files = (0...6).map do |i|
      ["a/c#{i}.rb", "sleep 0.01; $loads = ($loads || 0) + 1; #{"require 'c#{i + 1}'" if i < 5}"]
    end
    files += (0...8).map { |i| ["a/d#{i}.rb", "sleep 0.01"] }
    with_files(files) do |dir|
      _, with = same(<<~RUBY, sort_features: true)
        $LOAD_PATH.unshift("#{dir}/a")
        # Every thread asks for the same chain (c0 requires c1 ... c5): one wins, the rest wait.
        same = 8.times.map { Thread.new { require "c0" } }
        check(:same) { same.map(&:value).sort_by(&:to_s) }
        check(:loads) { $loads }
        distinct = 8.times.map { |t| Thread.new { require "d\#{t}" } }
        check(:distinct) { distinct.map(&:value) }
      RUBY
      assert_includes with.steps, [:loads, :ok, "6"]
    end
  end
end

class RequireThreadsTest < Minitest::Test
  include Loadout::TestSupport::Differential

  test "threads requiring different features while another mutates $LOAD_PATH" do
    files = (0...4).flat_map { |t| (0...25).map { |i| ["t#{t}/f#{t}_#{i}.rb", "nil"] } } +
            (0...25).map { |i| ["late/late#{i}.rb", "nil"] }
    with_files(files) do |dir|
      _, with = assert_same_behaviour(<<~RUBY, sort_features: true)
        $LOAD_PATH.unshift(*(0...4).map { |t| "#{dir}/t\#{t}" })
        workers = (0...4).map do |t|
          Thread.new { (0...25).map { |i| require "f\#{t}_\#{i}" }.count(true) }
        end
        mutator = Thread.new do
          25.times { |i| $LOAD_PATH.push("#{dir}/late"); require "late\#{i}"; $LOAD_PATH.delete("#{dir}/late") }
        end
        check(:counts) { workers.map(&:value) }
        mutator.join
        check(:total) { $LOADED_FEATURES.grep(%r{/(t\\d|late)/}).size }
      RUBY
      assert_includes with.steps, [:total, :ok, "125"]
      # How many the index answers depends on how the threads interleave with the $LOAD_PATH
      # changes (each sends the next require through a refresh): a loaded machine saw 39 of 125.
      assert_index_used(with, hits: 10)
    end
  end
end

class RequireDevelopmentModeTest < Minitest::Test
  include Loadout::TestSupport::Differential

  SCRIPT = <<~'RUBY'
    $LOAD_PATH.unshift("DIR/a", "DIR/b")
    check(:before) { require "later" }
    File.write("DIR/b/later.rb", "puts 'later'")
    check(:created) { require "later" }
    Dir.mkdir("DIR/a/newdir")
    File.write("DIR/a/newdir/deeper.rb", "puts 'deeper'")
    check(:new_dir) { require "newdir/deeper" }
  RUBY

  test "development mode: a missing feature created later is found, like plain Ruby" do
    with_files([["a/x.rb", "nil"], ["b/sub/y.rb", "nil"]]) do |dir|
      cleanup = -> { FileUtils.rm_rf(["#{dir}/b/later.rb", "#{dir}/a/newdir"]) }
      setup = "Loadout::LoadPath.install!(development_mode: true)"
      _, with = assert_same_behaviour(SCRIPT.gsub("DIR", dir), setup: setup, before_each: cleanup)
      assert_equal "later\ndeeper\n", with.stdout
      assert_index_used(with, hits: 2, misses: 1)
    end
  end

  # A miss re-checks the app dirs in every mode (the index no longer remembers misses).
  test "production mode: a missing feature created later is found too" do
    with_files([["a/x.rb", "nil"], ["b/sub/y.rb", "nil"]]) do |dir|
      cleanup = -> { FileUtils.rm_rf(["#{dir}/b/later.rb", "#{dir}/a/newdir"]) }
      setup = "Loadout::LoadPath.install!"
      _, with = assert_same_behaviour(SCRIPT.gsub("DIR", dir), setup: setup, before_each: cleanup)
      assert_equal "later\ndeeper\n", with.stdout
      assert_index_used(with, hits: 2, misses: 1)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "yaml"
require "date"
require "pathname"
require "support/compile_cache_values"
require "support/compile_cache_boot"
require "loadout/store"

class YamlTestThing
  attr_accessor :name
end

class CompileCacheYamlTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheValues

  DOCS = {
    "plain.yml" => "s: héllo\ni: 42\nf: 1.5\nbig: 123456789012345678901234567890\ninf: .inf\nnan: .nan\n" \
                   "n: ~\nb: true\nlist: [a, 'b', \"c\"]\nnested: {x: {y: [1, 2]}}\ntext: |\n  line one\n  line two\n",
    "symbols.yml" => ":key: :value\nother: :sym\nlist: [:a, :b]\n",
    "aliases.yml" => "base: &base {adapter: pg, pool: 5}\ndev:\n  <<: *base\n  db: dev\nlist: &l [1, 2]\nagain: *l\n" \
                     "str: &s shared\nstr2: *s\n",
    "dates.yml" => "day: 2024-01-02\nat: 2024-01-02 03:04:05.123456 +09:00\nutc: 2024-01-02T03:04:05Z\n",
    "empty.yml" => "",
    "comment.yml" => "# nothing here\n",
    "binary.yml" => "bin: !!binary aGVsbG8=\n",
    "bom.yml" => "\xEF\xBB\xBFa: 1\n".b,
    "objects.yml" => "r: !ruby/range 1..3\nre: !ruby/regexp /ab+/i\nthing: !ruby/object:YamlTestThing\n  name: x\n",
    "bad.yml" => "a: [1, 2\nb: {c\n",
    "top_string.yml" => "--- just a string\n",
    # No anchors: equal scalars are separate objects (deduplicated only under freeze: true).
    "dups.yml" => "a: same\nb: same\nc: [same, same, 'same']\nsame: {same: same}\ne: Hi!\n",
    "quoted_amp.yml" => "d: \"x & y\"\n",
    "flow_alias.yml" => "a: [&x 1, *x]\nb: {k: &y [1], l: *y}\n",
    # Non-ASCII Symbols (rails-i18n's dz.yml: date.order) and keys symbolized by symbolize_names.
    "unicode_symbols.yml" => "order:\n- :\u0F63\u0F7C\n- :\u65E5\u672C\n- :abc\n\u30AD\u30FC: \u5024\n"
  }.freeze

  PERMITTED = { permitted_classes: [Date, Time, Symbol], aliases: true }.freeze
  OPTION_SETS = [
    {}, { aliases: true }, PERMITTED, { symbolize_names: true }, { freeze: true },
    PERMITTED.merge(freeze: true, symbolize_names: true),
    { permitted_classes: [Symbol], permitted_symbols: [:value, :a] },
    { permitted_classes: ["Date", "Symbol"] }, { fallback: nil }, { fallback: false }, { fallback: :none },
    { filename: "named.yml" }, { aliases: false, freeze: false, symbolize_names: false }
  ].freeze
  UNSAFE_OPTION_SETS = [{}, { symbolize_names: true }, { freeze: true }, { fallback: nil }, { filename: "x.yml" },
                        { freeze: true, symbolize_names: true }].freeze

  def check_method(name, option_sets)
    with_value_cache(DOCS.to_a, [:yaml]) do |dir, store|
      DOCS.each_key do |file|
        path = File.join(dir, file)
        option_sets.each do |opts|
          fresh = outcome { uncached(Psych, name, path, **opts) }
          miss = outcome { YAML.public_send(name, path, **opts) }
          hit = outcome { YAML.public_send(name, path, **opts) }
          where = "#{name}(#{file}, #{opts})"
          assert_equal fresh, miss, where
          assert_equal fresh, hit, where
        end
      end
      stats = Loadout::CompileCache.stats[:yaml]
      assert_operator stats[:hits], :>, option_sets.size * 3, stats.inspect
      assert_equal 0, stats[:corrupt]
      assert store.keys.all? { |k| k.start_with?("cc/y/") }
    end
  end

  test "load_file with every keyword matches Psych exactly, errors included" do
    check_method(:load_file, OPTION_SETS)
  end

  test "safe_load_file with every keyword matches Psych exactly, rejections included" do
    check_method(:safe_load_file, OPTION_SETS)
  end

  test "unsafe_load_file matches Psych exactly" do
    check_method(:unsafe_load_file, UNSAFE_OPTION_SETS)
  end

  test "aliases come back as one shared object, and frozen results are deeply frozen" do
    with_value_cache([["a.yml", DOCS["aliases.yml"]]], [:yaml]) do |dir, _|
      path = File.join(dir, "a.yml")
      events = []
      Loadout.instrumentation = ->(event, _path, **info) { events << [event, info[:reason]].compact }
      2.times { YAML.load_file(path, aliases: true) }
      value = YAML.load_file(path, aliases: true)
      assert_same value["list"], value["again"]
      assert_same value["str"], value["str2"]
      frozen = 2.times.map { YAML.load_file(path, aliases: true, freeze: true) }.last
      assert frozen.frozen? && frozen["list"].frozen? && frozen["str"].frozen?
      assert_equal [[:miss], [:hit], [:hit]], events.first(3)
      # The frozen variant is a miss, then stored and served: its Strings compare by value (Psych
      # 4.0 deduplicates equal frozen Strings, which Marshal does not; see Fidelity).
      assert_equal [[:miss], [:hit]], events.drop(3)
      assert_equal "shared", frozen["str2"]
    ensure
      Loadout.instrumentation = nil
    end
  end

  test "an empty document returns the caller's own fallback object" do
    with_value_cache([["e.yml", ""]], [:yaml]) do |dir, _|
      path = File.join(dir, "e.yml")
      fallbacks = [{}, {}, []]
      results = fallbacks.map { |fb| YAML.load_file(path, fallback: fb) }
      fallbacks.zip(results).each { |fb, result| assert_same fb, result }
      assert_equal 2, Loadout::CompileCache.stats[:yaml][:hits]
    end
  end

  test "errors are raised as Psych raises them and nothing is cached" do
    with_value_cache([["bad.yml", DOCS["bad.yml"]], ["sym.yml", ":a: 1\n"]], [:yaml]) do |dir, store|
      bad = File.join(dir, "bad.yml")
      2.times do
        error = assert_raises(Psych::SyntaxError) { YAML.load_file(bad) }
        assert_equal outcome { uncached(Psych, :load_file, bad) }, [:raise, error.class, error.message]
        assert_includes error.message, bad
      end
      sym = File.join(dir, "sym.yml")
      2.times { assert_raises(Psych::DisallowedClass) { YAML.safe_load_file(sym) } }
      assert_empty store.keys
    end
  end

  test "an edited file is re-parsed, even with its old size and mtime" do
    with_value_cache([["c.yml", "v: aaaa\n"]], [:yaml]) do |dir, _|
      path = File.join(dir, "c.yml")
      2.times { assert_equal({ "v" => "aaaa" }, YAML.load_file(path)) }
      mtime = File.mtime(path)
      sleep 0.01
      File.write(path, "v: bbbb\n")
      File.utime(mtime, mtime, path)
      assert_equal({ "v" => "bbbb" }, YAML.load_file(path))
      assert_equal 1, Loadout::CompileCache.stats[:yaml][:stale]
    end
  end

  test "every lookup of a stored entry is one judgement, a changed or touched file's too" do
    with_value_cache([["w.yml", "k: v\n"], ["e.yml", ""]], [:yaml]) do |dir, _|
      path = File.join(dir, "w.yml")
      empty = File.join(dir, "e.yml")
      YAML.load_file(path)
      YAML.load_file(empty, fallback: :none)
      judgements = 0
      counter = Module.new { define_method(:judge) { |*args| (judgements += 1) && super(*args) } }
      Loadout::CompileCache::Entries.prepend(counter)
      begin
        2.times { assert_equal({ "k" => "v" }, YAML.load_file(path)) }
        assert_equal :none, YAML.load_file(empty, fallback: :none)
        assert_equal 3, judgements
        assert_equal 3, Loadout::CompileCache.stats[:yaml][:hits]
        File.write(path, "k: w\n")
        assert_equal({ "k" => "w" }, YAML.load_file(path))
        assert_equal 4, judgements
        YAML.load_file(path) # stored again
        later = Time.now + 60
        File.utime(later, later, path) # same bytes, new mtime: revalidated once, then its record vouches
        2.times { assert_equal({ "k" => "w" }, YAML.load_file(path)) }
        assert_equal 7, judgements
        assert_equal 1, Loadout::CompileCache.stats[:yaml][:revalidated]
      ensure
        counter.send(:remove_method, :judge)
      end
    end
  end

  test "relative paths and Pathnames share the absolute path's entry" do
    with_value_cache([["p.yml", "a: 1\n"]], [:yaml]) do |dir, _|
      YAML.load_file(File.join(dir, "p.yml"))
      Dir.chdir(dir) { assert_equal({ "a" => 1 }, YAML.load_file("p.yml")) }
      assert_equal({ "a" => 1 }, YAML.load_file(Pathname(dir).join("p.yml")))
      assert_equal 2, Loadout::CompileCache.stats[:yaml][:hits]
    end
  end

  test "calls it cannot reproduce go to Psych and are counted as skipped" do
    with_value_cache([["a.yml", "a: 1\n"]], [:yaml]) do |dir, store|
      path = File.join(dir, "a.yml")
      anonymous = Class.new
      assert_equal({ "a" => 1 }, YAML.safe_load_file(path, permitted_classes: [anonymous]))
      assert_raises(ArgumentError) { YAML.load_file(path, bogus: 1) }
      assert_equal({ skipped: 2, reasons: { option: 2 } },
                   Loadout::CompileCache.stats[:yaml].slice(:skipped, :reasons))
      assert_empty store.keys
    end
  end

  test "uninstall! puts Psych back in charge" do
    with_value_cache([["a.yml", "a: 1\n"]], [:yaml]) do |dir, store|
      Loadout::CompileCache.uninstall!
      YAML.load_file(File.join(dir, "a.yml"))
      assert_empty store.keys
    end
  end
end

class CompileCacheYamlBootTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheBoot

  test "Psych is hooked when the program loads it, never loaded by loadout itself, and hits across boots" do
    with_files([["app/config/a.yml", "a: [1, 2]\nb: :sym\n"]]) do |dir|
      app = File.join(dir, "app")
      body = <<~RUBY
        puts defined?(Psych).inspect
        require "yaml"
        p YAML.load_file(#{File.join(app, "config/a.yml").dump})
      RUBY
      cold = cc_boot(store: File.join(dir, "s.store"), roots: [app], body: body)
      warm = cc_boot(store: File.join(dir, "s.store"), roots: [app], body: body)
      # Hash#inspect's format is the child's (same Ruby as this one; Ruby 3.4 changed it).
      assert_equal "nil\n#{{ "a" => [1, 2], "b" => :sym }.inspect}\n", cold.stdout
      assert_equal cold.stdout, warm.stdout
      assert_equal [1, 0], [cold.count(:yaml, :misses), cold.count(:yaml, :hits)]
      assert_equal [0, 1], [warm.count(:yaml, :misses), warm.count(:yaml, :hits)]
    end
  end
end

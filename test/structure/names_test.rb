# frozen_string_literal: true

require "test_helper"

# loadout's names say what each piece is, one name one thing (docs/VOCABULARY.md), and its docs
# describe the code as it is:
# - no two classes or modules of loadout share a last name (two Entry, two Checker were two
#   different things under one word);
# - no constant of loadout is named like one of Ruby's or a library's top-level constants
#   (CompileCache::JSON made 12 places write ::JSON; Loadout::Rake shadowed Rake);
# - no phrase that described a removed mechanism, a renamed constant or a place outside the
#   repository is left in the code, the docs, the tests or the bench scripts;
# - the Ruby 3.1 constant-cache rule is stated once (docs/ARCHITECTURE.md), figures measured once
#   live in bench/results and the CHANGELOG, not in comments;
# - every internal __method is marked :nodoc:, and every component's init is declared in loadout.h.
class NamesTest < Minitest::Test
  include Loadout::TestSupport::Subprocess

  ROOT = File.expand_path("../..", __dir__)
  # LOADOUT_NAMES_LIB: another lib dir to check (to see this test fail on an older tree).
  LIB_DIR = ENV.fetch("LOADOUT_NAMES_LIB", File.join(ROOT, "lib"))
  # Libraries loadout works with, beside or inside: their top-level constants must not be shadowed.
  LIBRARIES = %w[json yaml psych digest msgpack rake zlib set fileutils open3 optparse tempfile tmpdir
                 securerandom rbconfig monitor etc fcntl pathname stringio strscan zeitwerk coverage objspace
                 ripper bundler rubygems].freeze

  # Phrases that described removed mechanisms, renamed constants, or pointed outside the repo.
  GONE = {
    "background compile" => "the worker that compiled misses after exit",
    "background worker" => "the same worker",
    ".capture` for its life" => "the flock lease on <store>.capture",
    "store>.capture" => "the same lease",
    "into the deferred writes" => "captures are claimed at once, not deferred",
    "miss_compile" => "the :exit mode",
    "QuietSpawn" => "the spawn of the background compiler",
    "compile_cache/worker" => "the background compiler's file",
    "Writer#at_run" => "the capture queue misnamed a writer",
    "CompileCache::Writer" => "the same",
    "context.writer" => "the same",
    "stat_lookup" => "the C judge calling back into Ruby for the stat record",
    "length << 40" => "the map value is (record length << 37) | offset",
    /Loadout::Require\b/ => "the require hook is LoadPath::RequireHook",
    "LoadPath::Counters" => "the counters are LoadPath::Index::COUNTERS",
    "LO_C_EXTENSION" => "a fallback counter nothing incremented",
    /(?<!lo_)lp_table_find/ => "Native.lp_table_find had no caller",
    /\bLoadPath::(Entry|Checker)\b/ => "LoadPath::LoadDir, LoadPath::ListingChecker",
    /\bCompileCache::Checker\b/ => "CompileCache::EntryChecker",
    /\b(Scan|Recovery|Probe|AppBundle|PrecompileBoot)::Result\b/ => "Tree, Findings, Answer, Paths, Outcome",
    /\bLoadout::Rake\b(?!Memo|Tasks)/ => "Loadout::RakeMemo, Loadout::RakeTasks (Loadout::Rake shadowed Rake)",
    /\bNative::(Listing|Table)\b/ => "Native::LoadPathListing, Native::LoadPathTable",
    "see CompileCache)" => "the hot-path rule is stated in docs/ARCHITECTURE.md",
    "`load` and autoload resolve" => "load is Ruby's own",
    "no filesystem access" => "a missing feature re-checks app dirs",
    "touches no file" => "the same",
    "../shared/DESIGN.md" => "a design document outside the repository",
    "STYLE.md" => "a style guide outside the repository",
    /\$LOAD_PATH`? entr(y|ies)/ => "a $LOAD_PATH element is an item (docs/VOCABULARY.md)"
  }.freeze

  # Where phrases are looked for: everything but history (CHANGELOG, dated bench results) and this file.
  def scanned_files
    files = Dir.chdir(ROOT) do
      Dir["{lib,ext,docs,test,bench,bin,exe,rakelib,.ci,.github}/**/*"] +
        %w[README.md Rakefile Gemfile loadout.gemspec .rubocop.yml]
    end
    files.reject! { |f| f.start_with?("bench/results/") || f == "test/structure/names_test.rb" }
    files.map { |f| File.join(ROOT, f) }.select { |f| File.file?(f) && !f.end_with?(".so", ".o", ".lock") }
  end

  # What a child that loaded every library above and every file of loadout's sees:
  # [names of loadout's classes and modules (private constants included), names of the public
  # constants inside them, top-level constants].
  def loadout_names
    @loadout_names ||= begin
      script = <<~RUBY
        #{LIBRARIES.inspect}.each { |l| begin; require l; rescue LoadError; end }
        files = Dir.chdir(#{LIB_DIR.dump}) { Dir["loadout.rb"] + Dir["loadout/**/*.rb"] }.sort - ["loadout/setup.rb", "loadout/prelude/record.rb"] # (record.rb: a program)
        files.each { |f| require File.join(#{LIB_DIR.dump}, f) }
        name = Module.instance_method(:name)
        mods = ObjectSpace.each_object(Module).select { |m| name.bind_call(m)&.start_with?("Loadout::") }
        consts = mods.flat_map { |m| m.constants(false).map { |c| "\#{name.bind_call(m)}::\#{c}" } }
        print Marshal.dump([mods.map { |m| name.bind_call(m) }.sort, consts.sort, Object.constants.map(&:to_s).sort])
      RUBY
      r = run_ruby!(script, env: { "LOADOUT_DISABLE" => "1" })
      Marshal.load(r.stdout) # rubocop:disable Security/MarshalLoad -- our own child's output
    end
  end

  test "no two classes or modules of loadout share a last name" do
    mods, = loadout_names
    assert_operator mods.size, :>, 100, "the child loaded loadout's files"
    shared = mods.group_by { |n| n.split("::").last }.select { |_, names| names.size > 1 }
    assert_empty shared.values.map { |names| names.join(" and ") }
  end

  test "no constant of loadout is named like a top-level constant of Ruby or of a library it works with" do
    mods, consts, top = loadout_names
    assert_includes top, "Rake", "the child loaded the libraries"
    named = (mods + consts).uniq.select { |n| top.include?(n.split("::").last) }
    assert_empty named
  end

  test "no file says ::JSON, ::YAML or ::Psych: nothing inside Loadout is in the way" do
    found = Dir[File.join(LIB_DIR, "**/*.rb")].select { |f| File.read(f).match?(/::(JSON|YAML|Psych)\b/) }
    assert_empty found.map { |f| f.delete_prefix("#{LIB_DIR}/") }
  end

  test "no phrase of a removed mechanism, a renamed constant or a place outside the repository is left" do
    found = scanned_files.flat_map do |file|
      text = File.read(file, encoding: "BINARY").force_encoding("UTF-8").scrub
      GONE.select { |phrase, _| phrase.is_a?(Regexp) ? text.match?(phrase) : text.include?(phrase) }
          .map { |phrase, why| "#{file.delete_prefix("#{ROOT}/")}: #{phrase.inspect} (#{why})" }
    end
    assert_operator scanned_files.size, :>, 300, "the scan sees the tree"
    assert_empty found
  end

  test "the Ruby 3.1 constant-cache rule is stated in docs/ARCHITECTURE.md only; code points there" do
    stated = /constant caches?\b/i
    found = (Dir[File.join(LIB_DIR, "**/*.rb")] + Dir[File.join(ROOT, "ext/loadout/*.{c,h}")])
            .select { |f| File.read(f).match?(stated) }
    assert_empty found.map { |f| f.delete_prefix("#{ROOT}/") }
    assert_match stated, File.read(File.join(ROOT, "docs/ARCHITECTURE.md"))
  end

  test "comments in lib and ext carry no measured figures (they live in bench/results and the CHANGELOG)" do
    figure = Regexp.union(/\d[\d,.]*\s?[kMG]?\s(instructions|objects)\b/,
                          /\d[\d.]*(-\d[\d.]*)?\s?(ms|µs|us|ns) (per|of)\b/, /\d\s?(→|->)\s?\d/)
    found = (Dir[File.join(LIB_DIR, "**/*.rb")] + Dir[File.join(ROOT, "ext/loadout/*.{c,h}")]).flat_map do |file|
      File.foreach(file).with_index(1).filter_map do |line, no|
        comment = line[/(#|\/\/|\/?\*)\s.*/]
        "#{file.delete_prefix("#{ROOT}/")}:#{no}: #{line.strip}" if comment&.match?(figure)
      end
    end
    assert_empty found
  end

  test "every internal __method is marked :nodoc:" do
    unmarked = Dir[File.join(LIB_DIR, "**/*.rb")].flat_map do |file|
      File.foreach(file).with_index(1).filter_map do |line, no|
        internal = line.match?(/^\s*def (self\.)?__\w/)
        "#{file.delete_prefix("#{ROOT}/")}:#{no}: #{line.strip}" if internal && !line.include?("# :nodoc:")
      end
    end
    assert_empty unmarked
  end

  test "every component init that loadout.c calls is declared in loadout.h" do
    calls = File.read(File.join(ROOT, "ext/loadout/loadout.c")).scan(/\b(lo_\w+_native_init)\(/).flatten
    declared = File.read(File.join(ROOT, "ext/loadout/loadout.h")).scan(/^void (lo_\w+_native_init)\(/).flatten
    assert_operator calls.size, :>=, 8
    assert_empty calls - declared
  end
end

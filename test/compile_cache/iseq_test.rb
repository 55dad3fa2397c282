# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "loadout/store"
require "loadout/compile_cache"
require "support/compile_cache_boot"
require "support/ruby_facts"

# Every test boots real child Rubies: the ISeq cache only acts inside require.
class CompileCacheISeqTest < Minitest::Test
  include Loadout::TestSupport::CompileCacheBoot

  def setup
    skip "ISeq caching is CRuby only" unless Loadout::CompileCache.supported?(:iseq)
  end

  # A generated program touching what a compile cache could get wrong. Written in binary so the
  # EUC-JP file keeps its bytes.
  PROGRAM = {
    "lib/consts.rb" => <<~'RUBY',
      module Consts
        A = 1
        S = "héllo"
        SYM = :"sym bol"
        puts [A, S, S.encoding, S.bytesize, S.frozen?, "lit".frozen?, SYM].inspect
      end
    RUBY
    "lib/euc.rb" => "# -*- coding: euc-jp -*-\nE = \"\xA4\xA2\"\nputs [E.encoding, E.bytes, __ENCODING__].inspect\n".b,
    "lib/binary.rb" => "# encoding: ascii-8bit\nB = \"\xff\xfe\"\nputs [B.encoding, B.bytes].inspect\n".b,
    "lib/frozen_true.rb" => <<~'RUBY',
      # frozen_string_literal: true
      s = "x"
      puts [s.frozen?, "x#{1}".frozen?].inspect
      begin
        s << "y"
      rescue => e
        puts e.class, e.message
      end
    RUBY
    "lib/frozen_false.rb" => "# frozen_string_literal: false\nputs \"x\".frozen?\n",
    "lib/file_line.rb" => <<~'RUBY',
      puts __FILE__, __LINE__, __dir__, __method__.inspect
      def where
        caller_locations(0).first(2).map { |l| [l.path, l.lineno, l.label, l.base_label] }
      end
      p where
      begin
        raise "boom"
      rescue => e
        p e.backtrace.first(1)
      end
      [1].each { p caller_locations(0, 1).map(&:label) }
      class Klass
        p [self, caller_locations(0, 1)[0].label]
      end
    RUBY
    "lib/folded_file.rb" => "puts \"at \#{__FILE__}:\#{__LINE__}\"\n", # the parser folds "at <path>:"
    "lib/heredocs.rb" => <<~'RUBY',
      X = <<~EOS
        a #{1 + 1}
          b
      EOS
      Y = <<-'RAW'
        no #{interp}
        RAW
      puts X, Y
    RUBY
    "lib/begin_end.rb" => "BEGIN { puts \"BEGIN block\" }\nEND { puts \"END block\" }\nputs \"body\"\n",
    "lib/toplevel_return.rb" => "puts \"before\"\nreturn\nputs \"after\"\n",
    "lib/end_marker.rb" => "puts \"above\"\n__END__\nnot { ruby\n",
    "lib/main_literal.rb" => "puts \"<main>\", caller_locations(0, 1)[0].label\n",
    "lib/warns.rb" => "W = 1\nW = 2\n",
    "lib/dup_key.rb" => "H = { a: 1, a: 2 }\np H\n",
    "lib/syntax_error.rb" => "def broken(\n  1 +\n"
  }.freeze
  UNCACHED = 2 # dup_key (a parse warning) and syntax_error are Ruby's to compile (negative entries)
  CACHED = PROGRAM.size - UNCACHED

  REQUIRES = <<~'RUBY'
    $LOAD_PATH.unshift File.join(APP, "lib")
    %w[consts euc binary frozen_true frozen_false file_line folded_file heredocs begin_end toplevel_return end_marker
       main_literal warns dup_key].each { |f| require f }
    begin
      require "syntax_error"
    rescue SyntaxError => e
      puts e.class, e.message
    end
  RUBY

  def with_app(files = PROGRAM)
    with_files(files.to_a) do |dir|
      app = File.join(dir, "app")
      FileUtils.mkdir_p(app)
      files.each_key { |f| FileUtils.mkdir_p(File.dirname(File.join(app, f))) }
      files.each { |f, body| File.binwrite(File.join(app, f), body) }
      yield app, File.join(dir, "cache.store")
    end
  end

  def body_for(app, code = REQUIRES)
    "APP = #{app.dump}\n#{code}"
  end

  def boot(app, store, code = REQUIRES, **kw)
    cc_boot(store: store, roots: [app], body: body_for(app, code), **kw)
  end

  def assert_same_output(expected, actual)
    assert_equal expected.stdout, actual.stdout
    assert_equal expected.stderr, actual.stderr
    assert_equal expected.status.exitstatus, actual.status.exitstatus
  end

  test "generated programs behave as in plain Ruby, cold and warm" do
    with_app do |app, store|
      plain = plain_boot(body_for(app))
      assert_includes plain.stdout, "SyntaxError"
      assert_includes plain.stderr, "duplicated"
      cold = boot(app, store)
      warm = boot(app, store)
      assert_same_output plain, cold
      assert_same_output plain, warm

      assert_equal PROGRAM.size, cold.count(:iseq, :misses)
      assert_equal PROGRAM.size, cold.count(:iseq, :compiles) # UNCACHED of them record "Ruby compiles this one"
      assert_equal CACHED, warm.count(:iseq, :hits)
      assert_equal 0, warm.count(:iseq, :misses)
      assert_equal 0, warm.count(:iseq, :compiles)
      assert_equal({ syntax_error: 1, compile_warnings: 1 }, warm.stats[:iseq][:reasons])
    end
  end

  # `loadout precompile` compiles files itself (ISeqBuild), at both warning levels.
  PRECOMPILE = <<~'RUBY'
    Dir[File.join(APP, "lib/*.rb")].sort.each { |f| Loadout::CompileCache.precompile(f) }
  RUBY

  test "precompile: a file whose parse warns only under -w is served without -w and compiled by Ruby with it" do
    with_app do |app, store|
      boot(app, store, PRECOMPILE)
      quiet = boot(app, store)
      assert_same_output plain_boot(body_for(app)), quiet
      # main_literal spells "<main>", which compile_file's label would be renamed from: Ruby's.
      assert_equal [CACHED - 1, 0], [quiet.count(:iseq, :hits), quiet.count(:iseq, :misses)]
      assert_equal({ label_literal: 1, syntax_error: 1, compile_warnings: 1 }, quiet.stats[:iseq][:reasons])

      verbose = boot(app, store, ruby_opts: ["-w"])
      plain = plain_boot(body_for(app), ruby_opts: ["-w"])
      assert_equal plain.stdout, verbose.stdout
      # Only the program's own warnings: -w also shows warnings from loading loadout itself.
      assert_equal plain.stderr.lines.grep(/#{Regexp.escape(app)}/), verbose.stderr.lines.grep(/#{Regexp.escape(app)}/)
      assert_includes verbose.stderr, "statement not reached" # lib/toplevel_return.rb
      assert_equal 2, verbose.stats[:iseq][:reasons][:compile_warnings]
      assert_equal CACHED - 2, verbose.count(:iseq, :hits)
    end
  end

  test "another compile option (--enable=frozen-string-literal) gets its own entries" do
    with_app do |app, store|
      flag = ["--enable=frozen-string-literal"]
      boot(app, store)
      default_keys = cc_keys(store, "i")
      cold = boot(app, store, ruby_opts: flag)
      warm = boot(app, store, ruby_opts: flag)
      assert_same_output plain_boot(body_for(app), ruby_opts: flag), warm
      refute_equal plain_boot(body_for(app)).stdout, warm.stdout # the option changes what the program sees
      assert_equal [PROGRAM.size, CACHED], [cold.count(:iseq, :misses), warm.count(:iseq, :hits)]
      assert_equal default_keys.size * 2, cc_keys(store, "i").size
      assert_equal CACHED, boot(app, store).count(:iseq, :hits) # the default entries are still there
    end
  end

  test "a same-size edit that keeps the old mtime (touch -r) is never served stale" do
    with_app("lib/v.rb" => "puts \"aaaa\"\n") do |app, store|
      code = "require File.join(APP, 'lib/v')"
      path = File.join(app, "lib/v.rb")
      boot(app, store, code)
      assert_equal "aaaa\n", boot(app, store, code).stdout
      mtime = File.mtime(path)
      File.write(path, "puts \"bbbb\"\n")
      File.utime(mtime, mtime, path)

      edited = boot(app, store, code)
      assert_equal "bbbb\n", edited.stdout
      assert_equal 1, edited.count(:iseq, :stale)
      assert_equal 1, edited.count(:iseq, :compiles)
      assert_equal "bbbb\n", boot(app, store, code).stdout
    end
  end

  # A warm boot looks up one store key per file it loads; each hit gives its key back and the
  # next is written into it (Key#lookup_key). Counted against the same boot with a Key that
  # makes every key anew: one object per file natively, none in Ruby (whose keys are new anyway).
  test "warm hits give their store key back: no key object per file loaded natively" do
    files = Array.new(60) { |i| ["lib/f#{i}.rb", "F#{i} = #{i}\n"] }.to_h
    with_app(files) do |app, store|
      code = <<~'RUBY'
        before = GC.stat(:total_allocated_objects)
        60.times { |i| require "#{APP}/lib/f#{i}" }
        puts "made=#{GC.stat(:total_allocated_objects) - before}"
      RUBY
      anew = <<~'RUBY'
        Loadout::CompileCache::Key.prepend(Module.new { def lookup_key(letter, variant, path) = self.for(letter, variant, path) })
      RUBY
      boot(app, store, code)
      made = [code, anew + code].map do |body|
        warm = boot(app, store, body)
        assert_equal [60, 0], [warm.count(:iseq, :hits), warm.count(:iseq, :misses)]
        Integer(warm.stdout[/made=(\d+)/, 1])
      end
      assert_in_delta Loadout::BACKEND == :native ? 60 : 0, made[1] - made[0], 1, made.inspect
    end
  end

  test "an mtime-only change everywhere (git clone, CI cache) revalidates without compiling" do
    with_app do |app, store|
      boot(app, store)
      later = Time.now + 3600
      Dir.glob("#{app}/**/*.rb").each { |f| File.utime(later, later, f) }

      # Each file with an entry is judged in one call (Entries#judge), revalidation included:
      # the cached ones and those whose negative entry leaves them to Ruby.
      counted = <<~'RUBY'
        judgements = 0
        Loadout::CompileCache::Entries.prepend(Module.new do
          define_method(:judge) { |*a| (judgements += 1) && super(*a) }
        end)
        at_exit { $stderr.puts "judgements: #{judgements}" }
      RUBY
      ci = boot(app, store, counted + REQUIRES)
      assert_equal CACHED, ci.count(:iseq, :revalidated)
      assert_equal [0, 0, 0, 0], %i[hits misses stale compiles].map { |f| ci.count(:iseq, f) }
      assert_includes ci.stderr, "judgements: #{CACHED + UNCACHED}"

      # The boots after it are plain hits again, each judged in one call with the stat record
      # the revalidation appended.
      again = boot(app, store, counted + REQUIRES)
      assert_equal CACHED, again.count(:iseq, :hits)
      assert_equal 0, again.count(:iseq, :revalidated)
      assert_equal again.stdout, ci.stdout
      assert_includes again.stderr, "judgements: #{CACHED + UNCACHED}"
    end
  end

  test "a fresh clone at the same path (new inodes, same bytes) revalidates without compiling" do
    with_app do |app, store|
      boot(app, store)
      clone = "#{app}.clone"
      FileUtils.cp_r(app, clone) # new inodes, new mtimes and ctimes
      FileUtils.rm_rf(app)
      File.rename(clone, app)

      ci = boot(app, store)
      assert_equal CACHED, ci.count(:iseq, :revalidated)
      assert_equal [0, 0, 0], %i[hits stale compiles].map { |f| ci.count(:iseq, f) }
      assert_same_output plain_boot(body_for(app)), ci
      again = boot(app, store)
      assert_equal [CACHED, 0], [again.count(:iseq, :hits), again.count(:iseq, :revalidated)]
      assert_same_output plain_boot(body_for(app)), again
    end
  end

  test "a moved or copied checkout hits and shows its real paths" do
    with_app do |app, store|
      boot(app, store)
      keys = cc_keys(store, "i").sort
      parent = File.dirname(app)

      moved = File.join(parent, "moved")
      FileUtils.mv(app, moved) # same inodes and ctimes: one-stat hits
      served = boot(moved, store)
      assert_same_output plain_boot(body_for(moved)), served
      assert_includes served.stdout, "#{moved}/lib/file_line.rb"
      assert_includes served.stdout, "at #{moved}/lib/folded_file.rb:1"
      # Where the parser folds folded_file.rb's path into a longer literal (parse.y; not Prism),
      # that file is recompiled, never rewritten.
      folded = Loadout::TestSupport::RubyFacts.folds_file_into_literals? ? 1 : 0
      assert_equal [CACHED - folded, folded],
                   [served.count(:iseq, :hits), served.stats[:iseq][:reasons][:relocation].to_i]

      copied = File.join(parent, "copied")
      FileUtils.cp_r(moved, copied) # new inodes and ctimes: revalidated by digest
      first = boot(copied, store)
      assert_same_output plain_boot(body_for(copied)), first
      assert_equal CACHED - folded, first.count(:iseq, :revalidated)
      assert_equal folded, first.count(:iseq, :compiles) # folded_file.rb, for its new path
      second = boot(copied, store)
      assert_same_output plain_boot(body_for(copied)), second
      assert_equal [CACHED, 0], [second.count(:iseq, :hits), second.count(:iseq, :compiles)]
      assert_equal keys, cc_keys(store, "i").sort
    end
  end

  test "YJIT and interpreter processes share entries without evicting each other" do
    with_app do |app, store|
      boots = [[], ["--yjit"]] * 3
      cold = boot(app, store)
      keys = cc_keys(store, "i").sort
      boots.each do |opts|
        warm = boot(app, store, ruby_opts: opts)
        assert_equal cold.stdout, warm.stdout
        assert_equal CACHED, warm.count(:iseq, :hits), "#{opts.inspect}: #{warm.stats[:iseq]}"
        assert_equal [0, 0, 0], %i[misses stale compiles].map { |f| warm.count(:iseq, f) }
      end
      assert_equal keys, cc_keys(store, "i").sort
    end
  end

  test "damaged payloads are misses and never crash Ruby" do
    with_app do |app, store|
      plain = plain_boot(body_for(app))
      boot(app, store)
      rng = Random.new(42)
      6.times do |trial|
        # One bit of every ISeq entry flipped in the store's file, where a disk or a copy
        # damages it: the record's CRC32C, checked on the read that returns an entry, is all
        # that stands between the damage and load_from_binary (an entry has no checksum of its
        # own). Trial 0 breaks the magic of the head (the entry's last bytes), the others a byte
        # of the payload (the entry's first bytes).
        bytes = File.binread(store)
        records = Loadout::Store::Format.parse(bytes, 0)[0].each_slice(4).select { |_, k, _, _| k.start_with?("cc/i/") }
        records.each do |_, key, off, len|
          value_at = off + Loadout::Store::Format::HEADER + key.bytesize
          entry = Loadout::CompileCache::Entry.load(bytes.byteslice(value_at, off + len - value_at))
          head = off + len - Loadout::CompileCache::Entry::HEAD
          at = trial.zero? ? head + 1 : value_at + rng.rand(entry.payload.bytesize)
          bytes.setbyte(at, bytes.getbyte(at) ^ (1 << rng.rand(8)))
        end
        assert_equal PROGRAM.size, records.map { |_, key, _, _| key }.uniq.size, "trial #{trial}" # negative ones too
        File.binwrite(store, bytes)
        damaged = boot(app, store)
        # The program's output, and at most one warning from the store about what it skipped.
        warnings, rest = damaged.stderr.lines.partition { |l| l.start_with?("loadout: ") }
        assert_operator warnings.size, :<=, 1, "trial #{trial}"
        warnings.each { |w| assert_match(/\Aloadout: cache store .*: \d+ corrupt records skipped/, w) }
        assert_equal [plain.stdout, plain.stderr, plain.status.exitstatus],
                     [damaged.stdout, rest.join, damaged.status.exitstatus], "trial #{trial}"
        assert_equal 0, damaged.count(:iseq, :hits), "trial #{trial}"
        assert_equal PROGRAM.size, damaged.count(:iseq, :misses), "trial #{trial}"
      end
      healed = boot(app, store)
      assert_equal CACHED, healed.count(:iseq, :hits)
    end
  end

  test "readonly reads the cache and leaves the store byte-identical" do
    with_app do |app, store|
      boot(app, store)
      File.write(File.join(app, "lib/warns.rb"), "W = 1\nW = 3\n") # stale
      later = Time.now + 60
      File.utime(later, later, File.join(app, "lib/consts.rb")) # would be revalidated
      before = Dir.glob("#{store}*").sort.to_h { |f| [f, File.binread(f)] }

      ro = boot(app, store, readonly: true)
      assert_same_output plain_boot(body_for(app)), ro
      assert_equal CACHED - 2, ro.count(:iseq, :hits)
      assert_equal [1, 1, 0], %i[stale revalidated compiles].map { |f| ro.count(:iseq, f) }
      assert_equal before, Dir.glob("#{store}*").sort.to_h { |f| [f, File.binread(f)] }
    end
  end

  test "while Coverage runs, cached ISeqs are not served and coverage is complete" do
    with_app do |app, store|
      boot(app, store)
      code = "require 'coverage'\nCoverage.start\n#{REQUIRES}\n" \
             "p Coverage.result.select { |f, _| f.start_with?(APP) }.sort.to_h"
      covered = boot(app, store, code)
      assert_same_output plain_boot(body_for(app, code)), covered
      assert_equal 0, covered.count(:iseq, :hits)
      assert_equal PROGRAM.size, covered.stats[:iseq][:reasons][:coverage]
    end
  end

  # The default: the boot stores the ISeqs Ruby compiled on its misses (a TracePoint on
  # :script_compiled), so no file is ever compiled twice and no process is started.
  test "capture: misses are stored from Ruby's own compile, and served as in plain Ruby" do
    with_app do |app, store|
      plain = plain_boot(body_for(app))
      counting = "$compiles = 0\nRubyVM::InstructionSequence.singleton_class.prepend(Module.new { " \
                 "def compile_file(*a, **k) = ($compiles += 1; super) })\n"
      cold = boot(app, store, counting + REQUIRES + "at_exit { $stderr.puts \"compile_file=\#{$compiles}\" }")
      warm = boot(app, store)
      assert_equal plain.stdout, cold.stdout
      assert_equal plain.stdout, warm.stdout
      assert_equal plain.stderr, warm.stderr
      assert_includes cold.stderr, "compile_file=0", "nothing compiled a second time"
      assert_equal PROGRAM.size, cold.count(:iseq, :misses)
      # Everything Ruby compiled without a warning: main_literal too (its labels are Ruby's own);
      # dup_key (a parse warning) and syntax_error get negative entries: Ruby's to compile.
      assert_equal PROGRAM.size, cold.count(:iseq, :compiles)
      assert_equal PROGRAM.size, cc_keys(store, "i").size
      assert_equal CACHED, warm.count(:iseq, :hits)
      assert_equal({ syntax_error: 1, compile_warnings: 1 }, warm.stats[:iseq][:reasons])
    end
  end

  # Capture and ISeqBinary load on a boot's first miss or relocation: their own files then go
  # through the handler, which leaves them to Ruby (a capture of capture.rb would reach for the
  # constant being autoloaded).
  test "capture: a warm boot loads neither Capture nor ISeqBinary; a later first miss loads both and is stored" do
    with_app do |app, store|
      own = "$LOADED_FEATURES.grep(%r{compile_cache/(capture|iseq_binary)\\.rb\\z}).map { |f| File.basename(f) }"
      probe = "#{REQUIRES}\nat_exit { $stderr.puts \"own=\#{#{own}.sort.join(\",\")}\" }\n"
      cold = boot(app, store, probe)
      assert_includes cold.stderr, "own=capture.rb,iseq_binary.rb\n"
      assert_equal PROGRAM.size, cold.count(:iseq, :misses) # loadout's own two files are not counted
      warm = boot(app, store, probe)
      assert_includes warm.stderr, "own=\n"
      assert_equal CACHED, warm.count(:iseq, :hits)

      File.write(File.join(app, "lib/consts.rb"), PROGRAM["lib/consts.rb"].sub("A = 1", "A = 2"))
      edited = boot(app, store, probe)
      assert_includes edited.stderr, "own=capture.rb,iseq_binary.rb\n"
      assert_equal [CACHED - 1, 1, 1], %i[hits stale compiles].map { |f| edited.count(:iseq, f) }
      assert_includes edited.stdout, "[2, "
      again = boot(app, store, probe)
      assert_equal [CACHED, 0], [again.count(:iseq, :hits), again.count(:iseq, :compiles)]
      assert_equal edited.stdout, again.stdout
    end
  end

  test "capture: a file changed while Ruby compiled it is not stored" do
    files = { "lib/a.rb" => "puts :a\n", "lib/b.rb" => "puts :b\n" }
    with_app(files) do |app, store|
      # The file changes between the miss (its stat) and the end of Ruby's compile.
      code = <<~'RUBY'
        Loadout::CompileCache::Capture.prepend(Module.new do
          def compiled(tp)
            File.write(tp.instruction_sequence.path, "puts :changed\n") if tp.instruction_sequence.path.end_with?("a.rb")
            super
          end
        end)
        load File.join(APP, "lib/a.rb")
        load File.join(APP, "lib/b.rb")
      RUBY
      boot(app, store, code)
      keys = cc_keys(store, "i")
      assert_equal 1, keys.size, keys.inspect
      assert keys.first.end_with?("lib/b.rb"), keys.inspect
    end
  end

  test "capture: files compiled without -w are not served under -w; a warning keeps a file Ruby's" do
    with_app do |app, store|
      boot(app, store)
      verbose = boot(app, store, ruby_opts: ["-w"])
      plain = plain_boot(body_for(app), ruby_opts: ["-w"])
      assert_equal plain.stdout, verbose.stdout
      assert_equal plain.stderr.lines.grep(/#{Regexp.escape(app)}/), verbose.stderr.lines.grep(/#{Regexp.escape(app)}/)
      assert_equal 0, verbose.count(:iseq, :hits), "captured without -w: unknown under -w"
      # Captured again under -w: served under -w from then on, except what warns there.
      again = boot(app, store, ruby_opts: ["-w"])
      assert_operator again.count(:iseq, :hits), :>, 0
      assert_equal plain.stderr.lines.grep(/#{Regexp.escape(app)}/), again.stderr.lines.grep(/#{Regexp.escape(app)}/)
    end
  end

  test "capture: parallel cold boots on one cache store each file once" do
    files = { "lib/a.rb" => "puts :a\n" }
    with_app(files) do |app, store|
      FileUtils.mkdir_p(File.dirname(store))
      barrier = File.join(File.dirname(store), "barrier")
      # Both children miss lib/a.rb on an empty store, then load it at the same moment.
      code = lambda do |me, other|
        "File.write(#{"#{barrier}.#{me}".dump}, '')\n" \
          "sleep 0.01 until File.exist?(#{"#{barrier}.#{other}".dump})\n" \
          "load File.join(APP, 'lib/a.rb')"
      end
      boots = [%w[1 2], %w[2 1]].map do |me, other|
        Thread.new { boot(app, store, code.call(me, other)) }
      end.map(&:value)
      assert_equal 1, boots.sum { |b| b.count(:iseq, :compiles) }, "one of them stored it, the other saw it stored"
      assert_equal 1, cc_keys(store, "i").size
      assert_equal ["a\n", "a\n"], boots.map(&:stdout)
    end
  end

  # A boot that began on an empty store does not look anything up, until it sees (under the
  # append lock, at its first capture) that a parallel boot has been storing this app's files:
  # from then on their entries serve it, as a warm store would.
  test "capture: a cold boot serves what a parallel boot stored while it ran" do
    files = { "lib/a.rb" => "puts :a\n", "lib/b.rb" => "puts :b\n" }
    with_app(files) do |app, store|
      FileUtils.mkdir_p(File.dirname(store))
      opened = File.join(File.dirname(store), "late-opened")
      done = File.join(File.dirname(store), "early-done")
      late_code = "File.write(#{opened.dump}, '')\n" \
                  "sleep 0.01 until File.exist?(#{done.dump})\n" \
                  "load File.join(APP, 'lib/a.rb')\nload File.join(APP, 'lib/b.rb')"
      late = Thread.new { boot(app, store, late_code) }
      begin
        deadline = Time.now + 120
        sleep 0.01 until File.exist?(opened) || !late.alive? || Time.now > deadline
        assert File.exist?(opened), "the late boot never opened its store"
        # Its store was empty when it opened it; now the early boot stores both files.
        early = boot(app, store, "load File.join(APP, 'lib/a.rb')\nload File.join(APP, 'lib/b.rb')")
      ensure
        File.write(done, "") # the late boot goes on whatever happened here
      end
      late = late.value
      assert_equal 2, early.count(:iseq, :compiles)
      assert_equal ["a\nb\n", "a\nb\n"], [early.stdout, late.stdout]
      # a.rb: a miss (nothing seen yet), its capture finds early's entry and skips to_binary;
      # b.rb: served from early's entry.
      assert_equal [1, 1, 0], [late.count(:iseq, :misses), late.count(:iseq, :hits), late.count(:iseq, :compiles)]
    end
  end

  test "a boot on an empty store looks nothing up, and serves what it captured once it finished" do
    files = { "lib/a.rb" => "puts [:a, __FILE__].inspect\n", "lib/b.rb" => "puts [:b, __LINE__].inspect\n" }
    with_app(files) do |app, store|
      code = <<~'RUBY'
        lookups = 0
        Loadout::CompileCache.entries.store.define_singleton_method(:get) { |k| (lookups += 1) && super(k) }
        %w[a b].each { |f| load File.join(APP, "lib/#{f}.rb") }
        puts "lookups=#{lookups}"
        Loadout::CompileCache.finish!
        %w[a b].each { |f| load File.join(APP, "lib/#{f}.rb") }
        puts "lookups=#{lookups}"
      RUBY
      cold = boot(app, store, code)
      plain = plain_boot(body_for(app, code.lines.grep_v(/lookups|Loadout/).join))
      assert_equal plain.stdout.lines.first(2) + ["lookups=0\n"] + plain.stdout.lines.last(2) + ["lookups=2\n"],
                   cold.stdout.lines
      assert_equal [2, 2, 2], [cold.count(:iseq, :misses), cold.count(:iseq, :compiles), cold.count(:iseq, :hits)]
      assert_equal 2, cc_keys(store, "i").size
    end
  end

  test "trust: :stable skips the stat for gem files only" do
    files = { "app/a.rb" => "puts \"app-1\"\n", "gem/g.rb" => "puts \"gem-1\"\n" }
    with_app(files) do |root, store|
      code = "require File.join(APP, 'app/a'); require File.join(APP, 'gem/g')"
      roots = [File.join(root, "app"), File.join(root, "gem")]
      run = lambda do |trust|
        cc_boot(store: store, roots: roots, body: body_for(root, code), install: ", trust: #{trust.inspect}")
      end
      run.call(nil)
      files.each_key { |f| File.write(File.join(root, f), File.read(File.join(root, f)).sub("-1", "-2")) }
      trusted = run.call(:stable)
      assert_equal "app-2\ngem-1\n", trusted.stdout # an immutable image would never see gem-2
      assert_equal "app-2\ngem-2\n", run.call(nil).stdout
    end
  end

  test "an internal failure falls back to Ruby with one warning" do
    with_app do |app, store|
      code = <<~'RUBY'
        broken = Object.new
        def broken.get(_) = raise(IOError, "disk on fire")
        def broken.put(*) = nil
        def broken.key?(_) = false
        def broken.writable? = true
        def broken.flush = nil
        Loadout::CompileCache.install!(store: broken, roots: [APP])
      RUBY
      failing = boot(app, store, code + REQUIRES)
      plain = plain_boot(body_for(app))
      assert_equal plain.stdout, failing.stdout
      assert_equal 1, failing.stderr.scan("loadout: compile cache (iseq) failed").size
      assert_equal plain.stderr, failing.stderr.lines.grep_v(/loadout: compile cache/).join
    end
  end
end

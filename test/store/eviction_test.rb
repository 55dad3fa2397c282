# frozen_string_literal: true

require "test_helper"
require "loadout/store"
require "loadout/compile_cache"
require "loadout/eviction"

# Loadout::Eviction (which entries compaction drops) and the store's automatic sweep.
class EvictionTest < Minitest::Test
  Format = Loadout::Store.const_get(:Format)
  DAY = Loadout::CompileCache::Key::DAY

  def key_for(roots, path, variant = "v1")
    Loadout::CompileCache::Key.new(roots).for("i", variant, path)
  end

  def stat_key(key)
    Loadout::CompileCache::Key.stat_key(key)
  end

  # Runs a compaction of a store holding +entries+ (key => value) with Eviction for +roots+ at
  # +now+; returns [the keys left, the eviction].
  def compact_with(dir, entries, roots, now: Time.now)
    path = File.join(dir, "store")
    File.delete(path) if File.exist?(path)
    Loadout::Store.open(path) { |s| entries.each { |k, v| s.put(k, v) } }
    eviction = Loadout::Eviction.new(roots: roots, now: now)
    Loadout::Store.open(path) { |s| assert s.compact(evict: eviction) }
    [Loadout::Store.open(path, readonly: true) { |s| s.each.map { |k, _| k }.sort }, eviction]
  end

  test "a compile cache entry and its stat record go when their source is gone; others stay" do
    with_files([["app/lib/kept.rb", "1"], ["gems/g-2/lib/g.rb", "1"], ["gone/"]]) do |dir|
      app = File.join(dir, "app")
      gems = File.join(dir, "gems")
      roots = [app, gems]
      kept = key_for(roots, File.join(app, "lib/kept.rb"))
      deleted = key_for(roots, File.join(app, "lib/deleted.rb"))
      old_gem = key_for(roots, File.join(gems, "g-1/lib/g.rb"))
      new_gem = key_for(roots, File.join(gems, "g-2/lib/g.rb"))
      absolute = key_for(roots, File.join(dir, "gone/outside.rb")) # under no root: keyed by its path
      unknown = "cc/i/v1/some-other-root/lib/x.rb"                 # a tag these roots do not know
      entries = [kept, deleted, old_gem, new_gem, absolute, unknown].flat_map { |k| [[k, "e"], [stat_key(k), "s"]] }
      left, eviction = compact_with(dir, entries.to_h.merge("st/last_boot" => "b"), roots)
      expected = [kept, new_gem, unknown].flat_map { |k| [k, stat_key(k)] } + ["st/last_boot"]
      assert_equal expected.sort, left
      assert_equal 6, eviction.count
      assert_operator eviction.bytes, :>, 6 * Format::HEADER
    end
  end

  test "a source is kept while any root that knows its tag has it (the recorded roots or this process's)" do
    with_files([["old_home/3.1.0/gems/a-1/lib/a.rb", "1"], ["new_home/3.1.0/"], ["app/"]]) do |dir|
      app = File.join(dir, "app")
      recorded = [app, File.join(dir, "old_home/3.1.0")]
      own = [app, File.join(dir, "new_home/3.1.0")] # same tag "3.1.0", another directory
      key = key_for(recorded, File.join(dir, "old_home/3.1.0/gems/a-1/lib/a.rb"))
      seen = ([Time.now.to_i / DAY] + recorded).join("\n")
      left, = compact_with(dir, { key => "e", "st/seen/v1" => seen }, own)
      assert_includes left, key, "found under the root the variant's boots recorded"
      left, = compact_with(dir, { key => "e" }, own)
      refute_includes left, key, "no record: this process's roots decide, and the file is not there"
    end
  end

  # A cache dir shared by two containers (Ruby 3.1's and 3.3's images): each sees only its own
  # Ruby's files, so neither may call the other's sources gone.
  test "entries a variant's boots recorded under other roots are kept (another container's Ruby)" do
    with_files([["app/lib/x.rb", "1"]]) do |dir|
      app = File.join(dir, "app")
      elsewhere = File.join(dir, "other-container/usr/lib/ruby/3.1.0") # not on this filesystem
      recorded = [app, elsewhere]
      key = key_for(recorded, File.join(elsewhere, "set.rb"))
      gone = key_for(recorded, File.join(app, "lib/deleted.rb"))
      seen = ([Time.now.to_i / DAY] + recorded).join("\n")
      left, = compact_with(dir, { key => "e", gone => "e", "st/seen/v1" => seen }, [app])
      assert_includes left, key, "its root is not here: this process cannot tell"
      assert_includes left, gone, "recorded by boots of another environment: it ages out instead"
      left, = compact_with(dir, { gone => "e", "st/seen/v1" => ([Time.now.to_i / DAY] + [app]).join("\n") }, [app])
      refute_includes left, gone, "recorded by boots with this process's roots: gone is gone"
    end
  end

  test "a variant no boot has used for #{Loadout::Eviction::UNUSED_DAYS} days goes, with its record" do
    with_files([["app/lib/a.rb", "1"]]) do |dir|
      app = File.join(dir, "app")
      now = Time.now
      old_day = now.to_i / DAY - Loadout::Eviction::UNUSED_DAYS - 1
      recent_day = now.to_i / DAY - Loadout::Eviction::UNUSED_DAYS
      old = key_for([app], File.join(app, "lib/a.rb"), "old")
      recent = key_for([app], File.join(app, "lib/a.rb"), "recent")
      never = key_for([app], File.join(app, "lib/a.rb"), "never") # no record yet: kept
      entries = { old => "e", stat_key(old) => "s", recent => "e", never => "e",
                  "st/seen/old" => "#{old_day}\n#{app}", "st/seen/recent" => "#{recent_day}\n#{app}" }
      left, = compact_with(dir, entries, [app], now: now)
      assert_equal [never, recent, "st/seen/recent"].sort, left
    end
  end

  test "listings of directories that are gone go, unless they recorded the directory missing; old indexes go" do
    with_files([["lib/here/x.rb", "1"], ["lib/gone/y.rb", "2"]]) do |dir|
      here = File.join(dir, "lib/here")
      gone = File.join(dir, "lib/gone")
      never = File.join(dir, "lib/never") # missing when it was listed (a site dir often is)
      listing = ->(path) { Loadout::LoadPath::Codec.encode(path, ["x.rb"], [""], [1], []) }
      entries = {
        "lp/ent/#{here}" => listing.(here), "lp/ent/#{gone}" => listing.(gone),
        "lp/ent/#{never}" => Loadout::LoadPath::Codec.encode(never, [], [], [], []),
        "lp/idx/old" => "an index of an earlier version", "lp/recent" => "r", "lp/boot" => "b"
      }
      FileUtils.rm_rf(gone)
      left, = compact_with(dir, entries, [dir])
      assert_equal ["lp/boot", "lp/ent/#{here}", "lp/ent/#{never}"].sort, left
    end
  end

  test "seen records: one per variant used, with the day and the roots; parsed back" do
    key = Loadout::CompileCache::Key.new(["/app", "/gems"])
    now = Time.at(1_700_000_000)
    assert_empty key.seen_records(now), "no variant used yet"
    v1 = key.variant(:iseq, "opts")
    v2 = key.variant(:yaml, "")
    records = key.seen_records(now)
    assert_equal ["st/seen/#{v1}", "st/seen/#{v2}"].sort, records.keys.sort
    assert_equal "#{now.to_i / DAY}\n/app\n/gems", records["st/seen/#{v1}"]
    assert_equal [now.to_i / DAY, ["/app", "/gems"]], Loadout::CompileCache::Key.parse_seen(records.values.first)
    assert_nil Loadout::CompileCache::Key.parse_seen("garbage")
    assert_nil Loadout::CompileCache::Key.parse_seen(nil)
    assert_empty Loadout::CompileCache::Key.new(["/a\nb"]).tap { |k| k.variant(:iseq, "") }.seen_records(now)
  end

  test "a boot writes its seen records once a day: a second warm boot the same day writes nothing" do
    require_relative "../integration/app_helper"
    extend Loadout::TestSupport::App
    with_app do |app|
      boot_app!(app)
      sleep 2.1 # past the racy window of the files' ctime: later boots append no revalidation record
      2.times { boot_app!(app) }
      store = File.join(app, "tmp/cache/loadout/store")
      seen = Loadout::Store.open(store, readonly: true) { |s| s.each.map { |k, _| k }.grep(%r{\Ast/seen/}) }
      assert_equal 3, seen.size, "iseq, yaml and json variants"
      size = File.size(store)
      boot_app!(app)
      assert_equal size, File.size(store), "a warm boot the same day appends nothing"
    end
  end

  test "an evictor that raises keeps the entry" do
    with_files([["app/"]]) do |dir|
      eviction = Loadout::Eviction.new(roots: [File.join(dir, "app")])
      refute eviction.call("lp/ent/#{dir}/gone", ->(_) { raise IOError, "boom" }, 10)
      assert_equal 0, eviction.count
    end
  end

  # The store side: the header baseline and the growth rule.
  test "the file header records the size of the first write and of each compaction" do
    with_files do |dir|
      path = File.join(dir, "store")
      Loadout::Store.open(path, defer_writes: true) { |s| 3.times { |i| s.put("k#{i}", "v" * 100) } } # one write
      first = File.size(path)
      assert_equal first, Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0]
      Loadout::Store.open(path) do |s|
        s.put("k0", "w" * 100)
        s.compact
      end
      assert_equal File.size(path), Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0]
      ids = [Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[1]]
      old_style = Format.frame_into(+"".b, Format::META, Format::FILE_HEADER_KEY, "")
      assert_equal [0, nil], Format.read_header(old_style + "x" * 40)
      size_only = Format.frame_into(+"".b, Format::META, Format::FILE_HEADER_KEY, [123].pack("Q<"))
      assert_equal [123, nil], Format.read_header(size_only + "x" * 40), "a file of loadout before 0.2: no log id"
      # Every file gets a log id of its own: the first write, and each compaction.
      Loadout::Store.open(path) { |s| s.compact }
      ids << Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[1]
      File.delete(path)
      Loadout::Store.open(path) { |s| s.put("k", "v") }
      ids << Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[1]
      assert_equal 3, ids.uniq.size
      assert(ids.all? { |id| id.bytesize == Format::LOG_ID_SIZE })
    end
  end

  test "with an evictor armed, a sweep runs once the log has grown by half since it was last compacted" do
    with_files do |dir|
      path = File.join(dir, "store")
      calls = []
      evict = lambda do |key, _read, _len|
        calls << key
        key.start_with?("dead/")
      end
      chunk = "x" * 1024
      Loadout::Store.open(path) do |s|
        s.evictor = evict
        400.times { |i| s.put("live/#{i}", chunk) } # one write each: the first one is the baseline
      end
      # What a process that found the log empty appended (a cold boot's whole log) is live by
      # construction: no sweep copies it, the hint records the log as swept to its end.
      first = Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0]
      assert_operator first, :<, 2048, "400 KiB appended past a tiny first write by the process that began the log"
      assert_empty calls
      grown = File.size(path)
      Loadout::Store.open(path) do |s|
        s.evictor = evict
        s.put("dead/x", chunk) # the next boot appends a little: counted from the swept end
      end
      assert_empty calls, "the swept end came with the hint: no sweep"
      assert_equal first, Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0]
      File.delete("#{path}.hint") # without it, the header's baseline is all the store knows
      Loadout::Store.open(path) do |s|
        s.evictor = evict
        s.put("new/0", chunk)
      end
      refute_empty calls, "no hint: the growth since the first write is swept"
      refute calls.include?("new/0"), "...judging only what earlier processes appended"
      assert_operator Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0], :>, grown / 2
      Loadout::Store.open(path, readonly: true) { |s| refute s.key?("dead/x") }
      calls.clear
      Loadout::Store.open(path) { |s| s.compact } # (no evictor: a plain compaction) the baseline is now the whole file
      base = Format.read_header(File.binread(path, Format::FILE_HEADER_SIZE))[0]
      assert_equal File.size(path), base
      calls.clear
      Loadout::Store.open(path) do |s|
        s.evictor = evict
        (base / 2 / 1100).times { |i| s.put("dead/#{i}", chunk) } # just under half the baseline
      end
      assert_empty calls, "grown by less than half: no sweep"
      Loadout::Store.open(path) do |s|
        s.evictor = evict
        (base / 2 / 1100).times { |i| s.put("dead/more#{i}", chunk) }
        refute_empty calls, "now past half: swept"
        refute s.key?("dead/0"), "what the sweep saw dead is gone"
        assert calls.none? { |k| k.start_with?("dead/more") }, "records appended by this process are not judged"
        assert s.key?("dead/more0"), "...and stay until a later process's sweep"
        assert_equal 400, s.each.count { |k, _| k.start_with?("live/") }
      end
      calls.clear
      Loadout::Store.open(path) { |s| 600.times { |i| s.put("dead/unarmed#{i}", chunk) } }
      assert_empty calls, "no evictor: no sweep (only the garbage rule compacts)"
    end
  end

  test "loadout compact applies the rule and says how many entries it evicted" do
    require "loadout/cli"
    require "stringio"
    with_files([["Gemfile", ""], ["lib/kept.rb", "1"]]) do |app|
      path = File.join(app, "tmp/cache/loadout/store")
      FileUtils.mkdir_p(File.dirname(path))
      roots = Loadout::Config.new(cache_dir: "tmp/cache/loadout", root: app).roots
      kept = key_for(roots, File.join(app, "lib/kept.rb"))
      gone = key_for(roots, File.join(app, "lib/gone.rb"))
      Loadout::Store.open(path) { |st| [kept, gone, stat_key(gone)].each { |k| st.put(k, "entry") } }
      out = StringIO.new
      env = { "BUNDLE_GEMFILE" => File.join(app, "Gemfile") }
      status = Loadout::CLI.new(["compact"], out: out, err: StringIO.new, env: env).run
      assert_equal 0, status
      assert_match(/\(2 entries evicted: sources gone, or unused for 30 days\)/, out.string)
      Loadout::Store.open(path, readonly: true) { |st| assert_equal [kept], st.each.map { |k, _| k } }
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "loadout/compile_cache"
require "support/compile_cache_store"

class CompileCacheValidatorTest < Minitest::Test
  CC = Loadout::CompileCache
  KEY = "cc/i/v/~/a.rb"

  def entry_for(path, verified: nil)
    id = CC::Digest.identity(path)
    verified ||= id[2] + CC::Validator::RACY_NS
    CC::Entry.load(CC::Entry.dump(CC::Entry::RAW, id, verified, CC::Digest.file(path), "payload"))
  end

  def with_source(body = "A = 1\n")
    with_files([["a.rb", body]]) do |dir|
      store = Loadout::TestSupport::CompileCacheStore.open(nil)
      yield File.join(dir, "a.rb"), store, CC::Validator.new(store, false)
    end
  end

  def touch_r(path, time)
    File.utime(time, time, path)
  end

  test "an untouched file is fresh with one stat, and nothing is written" do
    with_source do |path, store, validator|
      assert_equal :fresh, validator.check(path, entry_for(path), KEY)[0]
      assert_equal 0, store.puts
    end
  end

  test "a same-size edit that restores the mtime (touch -r) is stale" do
    with_source("A = 1\n") do |path, _store, validator|
      entry = entry_for(path)
      mtime = File.mtime(path)
      sleep 0.01 # let the ctime clock tick past the one the entry recorded
      File.write(path, "A = 2\n")
      touch_r(path, mtime)
      assert_equal File.size(path), entry.size
      assert_equal :stale, validator.check(path, entry, KEY)[0]
    end
  end

  test "a metadata-only change revalidates by digest, appends a stat record, then is fresh again" do
    with_source do |path, store, validator|
      entry = entry_for(path)
      touch_r(path, Time.now + 60)
      state, _, record = validator.check(path, entry, KEY)
      assert_equal :revalidated, state
      assert_equal 1, store.puts
      assert store.key?(CC::Key.stat_key(KEY))
      assert_equal entry.digest, record.digest

      validator.racy_ns = 0 # the record was verified just now; do not wait out the racy window
      assert_equal :fresh, validator.check(path, entry, KEY)[0]
      assert_equal 1, store.puts
    end
  end

  test "an entry verified within the racy window of the file's ctime is not trusted by stat alone" do
    with_source do |path, _store, validator|
      id = CC::Digest.identity(path)
      entry = entry_for(path, verified: id[2] + 1_000) # verified a microsecond after the change
      assert_equal :revalidated, validator.check(path, entry, KEY)[0]
    end
  end

  test "a readonly validator revalidates without writing" do
    with_source do |path, store, _|
      validator = CC::Validator.new(store, true)
      entry = entry_for(path)
      touch_r(path, Time.now + 60)
      assert_equal :revalidated, validator.check(path, entry, KEY)[0]
      assert_equal 0, store.puts
    end
  end

  test "a different size is stale without reading; a vanished file is missing" do
    with_source do |path, _store, validator|
      entry = entry_for(path)
      File.write(path, "A = 12\n")
      assert_equal :stale, validator.check(path, entry, KEY)[0]
      File.delete(path)
      assert_equal :missing, validator.check(path, entry, KEY)[0]
    end
  end

  test "a stat record for other content does not vouch for the entry" do
    with_source do |path, store, validator|
      entry = entry_for(path)
      touch_r(path, Time.now + 60)
      id = CC::Digest.identity(path)
      store.put(CC::Key.stat_key(KEY), CC::Entry.dump_stat(id, id[2] + CC::Validator::RACY_NS, entry.digest ^ 1))
      assert_equal :revalidated, validator.check(path, entry, KEY)[0]
    end
  end
end

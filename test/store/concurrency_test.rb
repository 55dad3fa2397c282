# frozen_string_literal: true

require "test_helper"
require "support/store_helpers"

class StoreConcurrencyTest < Minitest::Test
  include Loadout::TestSupport::StoreHelpers
  Format = Loadout::Store.const_get(:Format)

  test "8 writer processes x 2,000 records: all present exactly once, file verifies" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      pids = Array.new(8) do |w|
        fork do
          Loadout::Store.open(path) do |s|
            2000.times { |i| s.put("w#{w}-#{i}", "value #{w} #{i} " + ("v" * (i % 97))) }
          end
          exit!(0)
        end
      end
      statuses = pids.map { |pid| Process.wait2(pid)[1] }
      assert statuses.all?(&:success?), statuses.inspect

      entries, good_end, corrupt, = Format.parse(File.binread(path), 0)
      assert_equal File.size(path), good_end, "no torn or interleaved bytes"
      assert_equal 0, corrupt
      counts = Hash.new(0)
      entries.each_slice(4) { |flags, key, _, _| counts[key] += 1 if flags == Format::PUT }
      assert_equal 16_000, counts.size
      assert counts.values.all?(1), "a record was written twice"
      assert_equal 1, entries.each_slice(4).count { |flags, _, _, _| flags == Format::META }, "one file header"

      Loadout::Store.open(path) do |s|
        assert_equal 16_000, s.size
        assert_equal "value 7 1999 " + ("v" * (1999 % 97)), s.get("w7-1999")
      end
    end
  end

  test "readers never wait for the append lock" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      Loadout::Store.open(path) { |s| s.put("k", "v") }
      File.open(path, "rb") do |f|
        f.flock(File::LOCK_EX) # a writer stuck inside its append
        status = in_child(timeout: 10) do
          s = Loadout::Store.open(path)
          raise "wrong value" unless s.get("k") == "v"

          s.each { |_k, _v| nil }
          s.stats
          exit!(0)
        end
        assert status.success?
      end
    end
  end

  test "writers serialize on the lock instead of interleaving" do
    with_files do |dir|
      path = File.join(dir, "s.store")
      Loadout::Store.open(path) { |s| s.put("k", "v") }
      r, w = IO.pipe
      File.open(path, "rb") do |f|
        f.flock(File::LOCK_EX)
        pid = fork do
          r.close
          Loadout::Store.open(path) { |s| s.put("late", "x") }
          w.write("done")
          exit!(0)
        end
        w.close
        refute IO.select([r], nil, nil, 0.3), "the writer appended while another held the lock"
        f.flock(File::LOCK_UN)
        assert_equal "done", r.read
        Process.wait(pid)
      end
      Loadout::Store.open(path) { |s| assert_equal "x", s.get("late") }
    end
  end

  test "native and Ruby backends write identical bytes and read each other's files" do
    with_files do |dir|
      script = <<~RUBY
        require "loadout"
        path = ARGV[0]
        Loadout::Store.open(path) do |s|
          200.times { |i| s.put("k\#{i}".b, ("\\xFFv\#{i}".b * (i % 50)) + "é".b) }
          20.times { |i| s.delete("k\#{i * 3}") }
          s.put("k1", "again")
        end
        Loadout::Store.open(path) { |s| s.compact }
        Loadout::Journal.open(path + ".journal", sync: :none) do |j|
          ids = Array.new(30) { |i| j.append("event \#{i}") }
          ids.each_slice(3) { |a, _, _| j.ack(a) }
        end
        print Loadout::BACKEND
      RUBY
      outputs = { "0" => "native", "1" => "ruby" }.map do |pure, name|
        path = File.join(dir, "#{name}.store")
        res = run_ruby!(script, args: [path], env: { "LOADOUT_PURE" => pure })
        [res.stdout, path]
      end
      backends = outputs.map(&:first)
      skip "the native extension is not built here" unless backends.include?("native")

      native, ruby = outputs.map(&:last)
      # Every file has a random log id of its own in its header: the same bytes but for it (and
      # the header record's body CRC, which covers it).
      same = [native, ruby].map do |file|
        bytes = File.binread(file)
        assert_equal Format::LOG_ID_SIZE, Format.read_header(bytes)[1].bytesize
        bytes[16, 4] = "\0" * 4
        bytes[Format::FILE_HEADER_SIZE - Format::LOG_ID_SIZE, Format::LOG_ID_SIZE] = "\0" * Format::LOG_ID_SIZE
        bytes
      end
      assert same[0] == same[1], "store files differ between backends"
      assert_equal Dir.children("#{native}.journal").sort, Dir.children("#{ruby}.journal").sort
      Dir.children("#{native}.journal").grep(/segment/).each do |seg|
        assert File.binread("#{native}.journal/#{seg}") == File.binread("#{ruby}.journal/#{seg}"), seg
      end
      # Hints differ only in the log id and the inode/device they name (and so in their own CRC).
      hints = [native, ruby].map { |p| h = File.binread("#{p}.hint"); h.byteslice(40, h.bytesize - 44) }
      assert hints[0] == hints[1], "hint files differ between backends"

      reader = <<~RUBY
        require "loadout"
        Loadout::Store.open(ARGV[0], readonly: true) do |s|
          print Loadout::BACKEND, " ", s.size, " ", s.get("k1"), " ", s.get("k199").bytesize, " ", s.stats[:corrupt_records]
        end
      RUBY
      File.unlink("#{native}.hint")
      a = run_ruby!(reader, args: [native], env: { "LOADOUT_PURE" => "1" }).stdout
      b = run_ruby!(reader, args: [ruby], env: { "LOADOUT_PURE" => "0" }).stdout
      assert_equal "ruby 180 again 247 0", a
      assert_equal "native 180 again 247 0", b
    end
  end
end

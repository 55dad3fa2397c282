# frozen_string_literal: true

require "zlib"
require "loadout"

module Loadout
  module TestSupport
    # The kill -9 harness (research STORE.md T1/T2). Children append (and in :compact mode also
    # churn a scratch key and compact every 15 puts) and report each acknowledged put over a pipe
    # *after* put returned; the parent SIGKILLs them at a random moment, then reopens the store
    # and checks: every acknowledged record is present, intact and stored exactly once (I1, I2),
    # and a record put after recovery survives the next reopen (I3). Used by
    # test/store/crash_test.rb and `rake stress`.
    class StoreCrash
      Report = Struct.new(:trials, :acked, :lost, :wrong, :duplicated, :torn_cut, :torn_injected, :failures) do
        def ok?
          lost.zero? && wrong.zero? && duplicated.zero? && failures.empty? && acked > 0
        end

        def to_s
          "trials=#{trials} acked=#{acked} lost=#{lost} wrong=#{wrong} duplicated=#{duplicated} " \
            "torn_tails_injected=#{torn_injected} torn_tails_cut=#{torn_cut} failures=#{failures.first(5).inspect}"
        end
      end

      Format = Loadout::Store.const_get(:Format)

      # Stable value for a key: mostly small, sometimes large enough to span pages (so SIGKILL
      # can tear one write(2)).
      def self.value_for(key, large_every: 25, large_max: 16 << 10)
        h = Zlib.crc32(key)
        size = (h % large_every).zero? ? 2048 + (h % large_max) : 10 + (h % 300)
        (key * ((size / key.bytesize) + 1)).byteslice(0, size)
      end

      def initialize(dir, mode:, trials:, writers: 1, per_file: 10, max_puts: 400, seed: Random.new_seed)
        @dir = dir
        @mode = mode
        @trials = trials
        @writers = writers
        @per_file = per_file
        @max_puts = max_puts
        @rng = Random.new(seed)
        @report = Report.new(0, 0, 0, 0, 0, 0, 0, [])
      end

      def run
        @trials.times do |t|
          path = File.join(@dir, "crash-#{t / @per_file}.store")
          trial(path, t)
          check_exactly_once(path) if (t % @per_file) == @per_file - 1 || t == @trials - 1
        end
        @report
      end

      private

      def trial(path, t)
        children = Array.new(@writers) { |w| spawn_writer(path, "t#{t}w#{w}-", compactor: @mode == :compact && w.zero?) }
        children.each { |_, r| r.gets } # wait until each child has acknowledged something
        sleep(@rng.rand * 0.012)
        children.each { |pid, _| Process.kill(:KILL, pid) }
        acked = children.map do |pid, r|
          Process.wait(pid)
          lines = r.read.to_s.split("\n")
          r.close
          lines
        end
        inject_torn_tail(path, t) if @rng.rand < 0.3
        size_before = File.size(path)
        verify(path, children.each_index.map { |w| ["t#{t}w#{w}-", acked[w]] }, t)
        @report.torn_cut += 1 if File.size(path) < size_before
        @report.trials += 1
      end

      # SIGKILL tears a write(2) only now and then (it must land inside a multi-page copy), so a
      # third of the trials also leave what such a kill leaves: the first bytes of a record. The
      # next writer must cut it, or the record it appends is glued to it and lost (research
      # STORE.md, "glue").
      def inject_torn_tail(path, t)
        rec = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::PUT, "torn-#{t}", "z" * (1 + @rng.rand(5000)))
        File.open(path, "ab") { |f| f.write(rec.byteslice(0, 1 + @rng.rand(rec.bytesize - 1))) }
        @report.torn_injected += 1
      end

      def spawn_writer(path, prefix, compactor:)
        r, w = IO.pipe
        pid = fork do
          r.close
          store = Loadout::Store.open(path)
          w.write("start\n")
          w.flush
          @max_puts.times do |i|
            key = "#{prefix}#{i}"
            store.put(key, StoreCrash.value_for(key))
            if compactor
              store.put("scratch", "s" * 200)
              store.compact if (i % 15) == 14
            end
            w.syswrite("#{i}\n")
          end
          sleep 10 # wait for the kill
          exit!(0)
        end
        w.close
        [pid, r]
      end

      def verify(path, acked_by_prefix, t)
        store = Loadout::Store.open(path)
        acked_by_prefix.each do |prefix, lines|
          lines.each do |line|
            next if line == "start"

            key = "#{prefix}#{line}"
            @report.acked += 1
            value = store.get(key)
            if value.nil?
              @report.lost += 1
              @report.failures << "lost #{key}"
            elsif value != StoreCrash.value_for(key)
              @report.wrong += 1
              @report.failures << "wrong #{key}"
            end
          end
        end
        store.put("after-#{t}", "alive")
        store.close
        Loadout::Store.open(path, readonly: true) do |s|
          @report.failures << "post-recovery put lost (trial #{t})" unless s.get("after-#{t}") == "alive"
        end
      end

      def check_exactly_once(path)
        entries = Format.parse(File.binread(path), 0)[0]
        counts = Hash.new(0)
        entries.each_slice(4) { |flags, key, _, _| counts[key] += 1 if flags == Format::PUT && key.start_with?("t") }
        dups = counts.select { |_, n| n > 1 }
        @report.duplicated += dups.size
        @report.failures.concat(dups.keys.first(3).map { |k| "duplicated #{k}" })
      end
    end
  end
end

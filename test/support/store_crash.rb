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
      # can tear one write(2)). +uniform+: every value ends in the same bytes (padding, the ISeqs
      # of similar files), so the bytes before any record's end look alike.
      def self.value_for(key, large_every: 25, large_max: 16 << 10, uniform: false)
        h = Zlib.crc32(key)
        return "#{key}:" + ("x" * (200 + (h % 400))) if uniform

        size = (h % large_every).zero? ? 2048 + (h % large_max) : 10 + (h % 300)
        (key * ((size / key.bytesize) + 1)).byteslice(0, size)
      end

      # mode: :append (puts), :compact (writer 0 also compacts every +compact_every+ puts),
      # :rename_kill (as :compact, and writer 0 is killed right after its compaction's rename, see
      # #kill_at_rename) or
      # :churn (every writer opens the store, puts a few, writer 0 compacts now and then, and
      # closes, writing its hint, over and over: processes that compact, append and close while
      # others still have the file open). kill: false lets the writers finish instead of
      # SIGKILLing them (+rounds+ opens each).
      def initialize(dir, mode:, trials:, writers: 1, per_file: 10, max_puts: 400, seed: Random.new_seed,
                     uniform: false, compact_every: 15, kill: true, rounds: 6, kill_within: 0.012)
        @dir = dir
        @mode = mode
        @trials = trials
        @writers = writers
        @per_file = per_file
        @max_puts = max_puts
        @rng = Random.new(seed)
        @uniform = uniform
        @compact_every = compact_every
        @kill = kill
        @rounds = rounds
        @kill_within = kill_within # seconds after each writer's first ack
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
        children = Array.new(@writers) do |w|
          spawn_writer(path, "t#{t}w#{w}-", compactor: @mode != :append && w.zero?, seed: @rng.rand(1 << 30))
        end
        children.each { |_, r| r.gets } # wait until each child has acknowledged something
        kill_at_rename(path, children.first[0]) if @mode == :rename_kill
        if @kill
          sleep(@rng.rand * @kill_within)
          children.each { |pid, _| Process.kill(:KILL, pid) }
        end
        acked = children.map do |pid, r|
          Process.wait(pid)
          lines = r.read.to_s.split("\n")
          r.close
          lines
        end
        inject_torn_tail(path, t) if @kill && @rng.rand < 0.3
        size_before = File.size(path)
        verify(path, children.each_index.map { |w| ["t#{t}w#{w}-", acked[w]] }, t)
        @report.torn_cut += 1 if File.size(path) < size_before
        @report.trials += 1
      end

      # The compactor (writer 0) is killed as soon as its compaction has renamed the new log over
      # the old one: the file at +path+ is another inode. Its hint write, which follows the rename
      # (after the directory fsync), does not happen; the other writers go on appending to the new
      # log until they are killed in turn.
      def kill_at_rename(path, compactor)
        ino = File.stat(path).ino
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
        loop do
          now_ino = begin
            File.stat(path).ino
          rescue SystemCallError
            ino
          end
          break if now_ino != ino || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        end
        Process.kill(:KILL, compactor)
      end

      # SIGKILL tears a write(2) only now and then (it must land inside a multi-page copy), so a
      # third of the trials also leave what such a kill leaves: the first bytes of a record. The
      # next writer must cut it, or the record it appends is glued to it and lost (research
      # STORE.md, "glue").
      def inject_torn_tail(path, t)
        rec = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::PUT, "torn-#{t}",
                                "z" * (1 + @rng.rand(5000)))
        File.open(path, "ab") { |f| f.write(rec.byteslice(0, 1 + @rng.rand(rec.bytesize - 1))) }
        @report.torn_injected += 1
      end

      def spawn_writer(path, prefix, compactor:, seed:)
        r, w = IO.pipe
        pid = fork do
          r.close
          rng = Random.new(seed)
          store = Loadout::Store.open(path)
          w.write("start\n")
          w.flush
          i = 0
          rounds = 0
          while i < @max_puts
            key = "#{prefix}#{i}"
            store.put(key, StoreCrash.value_for(key, uniform: @uniform))
            if compactor && (@mode == :compact || @mode == :rename_kill)
              store.put("scratch", "s" * 200)
              store.compact if (i % @compact_every) == @compact_every - 1
            end
            w.syswrite("#{i}\n")
            i += 1
            next unless @mode == :churn && rng.rand < 0.2

            # Reopen: close (a hint for the file as this process saw it), maybe compact first.
            store.put("scratch", "s" * 200) if compactor
            store.compact if compactor && rng.rand < 0.5
            store.close
            rounds += 1
            break if !@kill && rounds >= @rounds

            store = Loadout::Store.open(path)
          end
          store.close unless @kill
          exit!(0) unless @kill

          sleep 10 # wait for the kill
          exit!(0)
        end
        w.close
        [pid, r]
      end

      # Checks every put acknowledged in this file so far (this trial's and every earlier one's:
      # a record lost later, by a later open or compaction, counts too), then that a put after
      # recovery survives the next reopen.
      def verify(path, acked_by_prefix, t)
        @file_acks = [] if @file_acks.nil? || @file_acks_path != path
        @file_acks_path = path
        acked_by_prefix.each do |prefix, lines|
          lines.each do |line|
            next if line == "start"

            @file_acks << "#{prefix}#{line}"
            @report.acked += 1
          end
        end
        store = Loadout::Store.open(path)
        @file_acks.each do |key|
          value = store.get(key)
          if value.nil?
            @report.lost += 1
            @report.failures << "lost #{key} (trial #{t})"
          elsif value != StoreCrash.value_for(key, uniform: @uniform)
            @report.wrong += 1
            @report.failures << "wrong #{key} (trial #{t})"
          end
        end
        alive = @uniform ? StoreCrash.value_for("after-#{t}", uniform: true) : "alive"
        store.put("after-#{t}", alive)
        store.close
        Loadout::Store.open(path, readonly: true) do |s|
          @report.failures << "post-recovery put lost (trial #{t})" unless s.get("after-#{t}") == alive
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

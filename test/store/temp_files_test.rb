# frozen_string_literal: true

require "test_helper"
require "loadout/trust"

# A failed write never leaves a temp file behind. The failures are real: a child Ruby lowers its
# RLIMIT_FSIZE (with SIGXFSZ ignored) so the kernel refuses, with EFBIG, every write past a few
# hundred bytes, exactly where a full disk would return ENOSPC.
class TempFilesTest < Minitest::Test
  # Prints the cache dir's files after the block's writes, then reopens the store unlimited.
  def run_limited(dir, body)
    script = <<~RUBY
      require "loadout"
      require "loadout/store"
      require "loadout/compile_cache"
      Signal.trap("XFSZ", "IGNORE")
      dir = #{dir.dump}
      path = File.join(dir, "store")
      limit = -> { Process.setrlimit(:FSIZE, 512) }
      #{body}
      puts "files: " + Dir.children(dir).sort.join(" ")
    RUBY
    run_ruby!(script).stdout
  end

  def files_line(out)
    out[/^files: .*$/].delete_prefix("files: ").split
  end

  test "a hint write that fails part-way leaves no temp file, and the store reopens by a scan" do
    with_files do |dir|
      out = run_limited(dir, <<~RUBY)
        store = Loadout::Store.open(path)
        60.times { |i| store.put("key-\#{i}", "value-\#{i}" * 20) }
        limit.call
        store.close
      RUBY
      assert_equal %w[store], files_line(out)
      Loadout::Store.open(File.join(dir, "store"), readonly: true) do |store|
        assert_equal 60, store.size
        assert_equal "value-7" * 20, store.get("key-7")
      end
    end
  end

  test "a compaction that fails part-way leaves no temp file and the old log intact" do
    with_files do |dir|
      out = run_limited(dir, <<~RUBY)
        store = Loadout::Store.open(path)
        60.times { |i| store.put("key-\#{i}", "value-\#{i}" * 20) }
        30.times { |i| store.delete("key-\#{i}") }
        store.close
        store = Loadout::Store.open(path)
        limit.call
        begin
          store.compact
          puts "compacted"
        rescue Loadout::StoreError => e
          puts "error: \#{e.message}"
        end
      RUBY
      assert_match(/^error: .*(EFBIG|too large)/i, out)
      assert_equal %w[store store.hint], files_line(out)
      Loadout::Store.open(File.join(dir, "store"), readonly: true) do |store|
        assert_equal 30, store.size
        assert_equal "value-42" * 20, store.get("key-42")
      end
    end
  end

  test "a self cache write that fails part-way leaves no temp file" do
    skip "loadout's self cache is written by the native backend only" unless Loadout::BACKEND == :native
    with_files do |dir|
      out = run_limited(dir, <<~RUBY)
        Loadout::Store.open(path) { |s| s.put("k", "v") }
        files = Dir[File.join(#{File.expand_path("../../lib/loadout/store", __dir__).dump}, "*.rb")]
        limit.call
        Loadout::SelfCache.write(Loadout::Trust::DirHandle.open(dir, false), "store.self-0123456789abcdef", files,
                                 RubyVM::InstructionSequence.compile_option)
      RUBY
      assert_equal %w[store store.hint], files_line(out)
    end
  end

  test "a journal rotation that fails part-way leaves no new segment behind" do
    with_files do |dir|
      journal_dir = File.join(dir, "journal")
      out = run_limited(dir, <<~RUBY)
        journal = Loadout::Journal.open(#{journal_dir.dump}, sync: :flush)
        ids = 40.times.map { |i| journal.append("event-\#{i}" * 10) }
        before = Dir.children(#{journal_dir.dump}).sort
        limit.call
        begin
          journal.rotate
        rescue Loadout::JournalError => e
          puts "error: \#{e.message}"
        end
        puts "same: \#{Dir.children(#{journal_dir.dump}).sort == before}"
      RUBY
      assert_match(/^error: .*rotate failed/, out)
      assert_match(/^same: true$/, out)
      Loadout::Journal.open(journal_dir) { |j| assert_equal 40, j.pending.size }
    end
  end

  test "an interrupt in the middle of a hint write or a compaction leaves no temp file either" do
    with_files do |dir|
      out = run_limited(dir, <<~RUBY)
        # Half the bytes go out, then the process is interrupted (^C) inside the write: of the
        # files the store creates (exclusively, in its directory), the hint's and the compaction's.
        interrupted = Module.new do
          def write(*args)
            return super unless $interrupt_writes

            super(args.first.byteslice(0, 100))
            raise Interrupt
          end

          def syswrite(buf)
            return super unless $interrupt_writes

            super(buf.byteslice(0, 100))
            raise Interrupt
          end
        end
        Loadout::Trust::DirHandle.prepend(Module.new do
          define_method(:create) do |name, flags|
            io = super(name, flags)
            io.extend(interrupted) if name.include?(".tmp.") || name.include?(".compact.")
            io
          end
        end)
        store = Loadout::Store.open(path)
        60.times { |i| store.put("key-\#{i}", "value-\#{i}" * 20) }
        30.times { |i| store.delete("key-\#{i}") }
        $interrupt_writes = true
        %i[compact close].each do |step|
          store.public_send(step)
        rescue Interrupt
          puts "interrupted: \#{step}"
        end
        $interrupt_writes = false
      RUBY
      assert_equal ["interrupted: compact", "interrupted: close"], out.lines.grep(/interrupted/).map(&:chomp)
      assert_equal %w[store], files_line(out)
      Loadout::Store.open(File.join(dir, "store"), readonly: true) { |store| assert_equal 30, store.size }
    end
  end

  test "DirHandle#write_atomically removes its temp file on any exception, an interrupt included" do
    with_files do |dir|
      handle = Loadout::Trust::DirHandle.open(dir, false)
      data = Object.new
      def data.to_s = raise(Interrupt)
      assert_raises(Interrupt) { handle.write_atomically("target", data) }
      assert_empty Dir.children(dir)
      assert handle.write_atomically("target", "bytes \xFE".b)
      assert_equal ["target"], Dir.children(dir)
      assert_equal "bytes \xFE".b, File.binread(File.join(dir, "target"))
      assert_equal 0o600, File.stat(File.join(dir, "target")).mode & 0o777
    ensure
      handle&.close
    end
  end
end

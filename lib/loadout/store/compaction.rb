# frozen_string_literal: true

require_relative "../binary_file"
require_relative "../trust"
require_relative "format"
require_relative "log_file"
require_relative "key_map"

module Loadout
  class Store
    # Compaction: under the append lock, read the whole log, copy every live record (verified by
    # that read, byte for byte) into a new file with a new log id, fdatasync it, rename it over
    # the log and fsync the directory. Readers keep reading the old inode through their open
    # descriptor, so they never wait; writers in other processes see the inode change after
    # taking the lock and reopen before appending (Store#with_write_lock).
    #
    # What is live is decided by the log alone, parsed from its first byte: never by the store's
    # key map, which may have come from a hint, so a hint can never make a compaction drop a
    # record. Also the rule for automatic compaction (#due) and the evictor it applies.
    class Compaction # :nodoc:
      CHUNK = 8 << 20
      AUTO_COMPACT_MIN_GARBAGE = 1 << 20 # and garbage above half the file
      # With an evictor armed, a sweep (compaction that drops what the evictor says is dead) also
      # runs once the log has grown by half since it was last compacted (or first written), and
      # by SWEEP_MIN_GROWTH: the log stays within about 1.5x what a sweep leaves plus one batch
      # of writes, and a sweep copies at most two bytes per byte appended since the last one.
      SWEEP_MIN_GROWTH = 256 << 10

      # The evictor automatic compactions apply (nil: none; see Store#evictor=).
      attr_accessor :evictor

      def initialize(dir, store_name)
        @dir = dir # Trust::DirHandle of the store's directory
        @name = store_name
        @evictor = nil
        @window = CHUNK # how much of the log is parsed at a time (#live_records)
      end

      # What an append that made the log +log_end+ bytes long calls for: :compact, :mark or nil.
      # :compact when garbage is above 1 MiB and half the file, for a file of an older loadout (no
      # log id: no hint can name it, so every open would scan it), and (with an evictor) once the
      # log has grown by half since it was last compacted (the size its file header records) or
      # marked. :mark instead of that sweep when this process found the log empty (+judged_below+,
      # the end it last read the log whole to, is 0): every record in it was appended by boots
      # running now, from files they just loaded, so the evictor could drop none of them and a
      # sweep would copy the log as it is (a cold boot's whole cache). The store then records
      # its end as +swept+ (kept in the hint) and growth counts from there.
      #: (LogFile, KeyMap, Integer, Integer, Integer) -> Symbol?
      def due(file, map, log_end, swept, judged_below)
        garbage = map.garbage_bytes + map.corrupt_bytes
        return :compact if garbage > AUTO_COMPACT_MIN_GARBAGE && garbage * 2 > log_end

        base, id = file.header
        return :compact unless id
        return nil unless @evictor
        return :mark if judged_below.zero?

        base = swept if swept > base
        :compact if log_end - base > SWEEP_MIN_GROWTH && log_end * 2 > base * 3
      end

      # Rewrites +old+ (locked, +size+ bytes long) with its live records, leaving out those
      # +evict+ drops: nil, or a callable (key, read, record bytes) -> true to leave the record
      # out, where read.(key) returns another key's value. Only records before +judged_below+
      # (nil: all) are offered to +evict+; later ones are kept. Closes +old+ once the new file is
      # in place (releasing its lock: waiting writers find the new inode). Returns the new file's
      # LogState (no hint yet: the store writes it once it has adopted the state); on any
      # failure, an interrupt included, the half-written copy goes and the old log stays.
      #: (LogFile, Integer, untyped, ?Integer?) -> LogState
      def run(old, size, evict = nil, judged_below = nil)
        remove_stale_temp_files
        kept = kept_records(old, live_records(old, size), evict, judged_below)
        tmp = "#{@name}.compact.#{Process.pid}.#{Random.urandom(8).unpack1("H*")}"
        # Opened for append and kept: after the rename this descriptor is the new log, even if
        # another process compacts again right away. Created exclusively, never through a symlink.
        out = @dir.create(tmp, File::RDWR | File::APPEND)
        renamed = false
        begin
          header, map, live, last, written = copy(old, kept, out)
          Format.fdatasync(out)
          @dir.rename(tmp, @name)
          renamed = true
        ensure
          unless renamed
            BinaryFile.close_quietly(out)
            @dir.unlink_quietly(tmp)
          end
        end
        @dir.fsync
        file = LogFile.new(@dir, @name, out, true)
        file.header = header
        old.close
        LogState.new(file, KeyMap.new(map, [live, 0, 0, 0, 0]), written, last, -1, nil, nil)
      end

      private

      # { key => packed } of the records live in the first +size+ bytes of +old+: the last PUT of
      # each key not deleted after it, as a reader of the whole log finds them. Read CHUNK bytes
      # at a time into one buffer, each window starting where the last valid record of the one
      # before ended (so it is parsed exactly as the whole log would be); a window with no whole
      # record in it (a record or a damaged stretch larger than it) is read again twice as large.
      def live_records(old, size)
        live = {}
        buf = String.new(capacity: @window, encoding: Encoding::BINARY)
        at = 0
        window = @window
        while at < size
          len = size - at < window ? size - at : window
          entries, good_end, = Format.parse(old.pread_into(buf, len, at), at)
          apply_live(live, entries)
          break if at + len >= size

          if good_end > at
            at = good_end
            window = @window
          else
            window *= 2
          end
        end
        live
      end

      def apply_live(live, entries)
        i = 0
        while i < entries.length
          flags = entries[i]
          if flags == Format::PUT
            live[entries[i + 1]] = (entries[i + 3] << Format::OFFSET_BITS) | entries[i + 2]
          elsif flags == Format::DELETE
            live.delete(entries[i + 1])
          end
          i += 4
        end
      end

      # [[key, packed], ...] of the live records +evict+ keeps (it may read other keys' values),
      # in the order they are in the log.
      def kept_records(old, live, evict, judged_below)
        kept = live.to_a
        if evict
          read = lambda do |key|
            packed = live[key]
            packed && old.read_value(key, packed)
          end
          judged_below ||= Float::INFINITY
          kept.reject! do |key, packed|
            (packed & Format::OFFSET_MASK) < judged_below && evict.call(key, read, packed >> Format::OFFSET_BITS)
          end
        end
        kept.sort_by! { |_, packed| packed & Format::OFFSET_MASK }
      end

      # Writes the file header and the +kept+ records of +old+ (each read back and checked again)
      # to +out+. Returns [header, map, live bytes, offset of the last record, bytes written].
      def copy(old, kept, out)
        id = Random.urandom(Format::LOG_ID_SIZE)
        baseline = Format::FILE_HEADER_SIZE + kept.sum { |_, packed| packed >> Format::OFFSET_BITS }
        buf = Format.file_header(baseline, id)
        last = 0
        written = 0
        live = 0
        map = {}
        kept.each do |key, packed|
          len = packed >> Format::OFFSET_BITS
          rec = old.pread(len, packed & Format::OFFSET_MASK)
          # Changed since it was parsed (under the lock: only a failing disk): kept out.
          next if Format.verify(rec, key).nil?

          last = written + buf.bytesize
          map[key] = (len << Format::OFFSET_BITS) | last
          live += len
          buf << rec
          next if buf.bytesize < CHUNK

          written += write_all(out, buf)
          buf = String.new(encoding: Encoding::BINARY)
        end
        written += write_all(out, buf)
        [[baseline, id], map, live, last, written]
      end

      def write_all(io, buf)
        done = 0
        done += io.syswrite(done.zero? ? buf : buf.byteslice(done, buf.bytesize - done)) while done < buf.bytesize
        done
      end

      # Files left by a process that died mid-write (a crash or SIGKILL: every other failure
      # removes its own). We hold the lock, so no compaction is running; the other temps (hint,
      # self cache) are abandoned once older than a minute.
      def remove_stale_temp_files
        base = @name.b
        old = Time.now - 60
        @dir.children.each do |name|
          next unless name.start_with?(base)

          rest = name.byteslice(base.bytesize, name.bytesize)
          # (.jobs: compile queues that earlier loadout versions left beside the store)
          if rest.start_with?(".compact.") || rest.match?(/\A\.compile-\d+-\h+\.jobs\z/n)
            @dir.unlink_quietly(name)
          elsif rest.match?(/\A\.(hint|self-\h+)\.tmp\./n)
            @dir.unlink_quietly(name) if (@dir.mtime(name) < old rescue false)
          end
        end
      rescue SystemCallError
        nil
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../binary_file"
require_relative "../trust"
require_relative "format"
require_relative "log_file"
require_relative "index"

module Loadout
  class Store
    # Compaction: under the append lock, copy every live record (re-verified, byte for byte) into a
    # new file, fdatasync it, rename it over the log and fsync the directory. Readers keep reading
    # the old inode through their open descriptor, so they never wait; writers in other processes
    # see the inode change after taking the lock and reopen before appending (Store#with_write_lock).
    #
    # Also the rule for automatic compaction (#due?) and the evictor it applies (#evictor).
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

      def initialize(path, shared)
        @path = path
        @shared = shared
        @evictor = nil
        @baseline = nil # [inode, the log size its file header recorded]
      end

      # Whether an automatic compaction is due, after an append made the log +log_end+ bytes
      # long: garbage above 1 MiB and half the file, or (with an evictor) growth since the size
      # the file header recorded.
      #: (LogFile, Index, Integer) -> bool
      def due?(file, index, log_end)
        garbage = index.garbage_bytes + index.corrupt_bytes
        return true if garbage > AUTO_COMPACT_MIN_GARBAGE && garbage * 2 > log_end
        return false unless @evictor

        base = baseline(file)
        log_end - base > SWEEP_MIN_GROWTH && log_end * 2 > base * 3
      end

      # Rewrites +old+ (locked, its map +index+) with its live records, leaving out those +evict+
      # drops: nil, or a callable (key, read, record bytes) -> true to leave the record out.
      # Closes +old+ once the new file is in place (releasing its lock: waiting writers find the
      # new inode). Returns the new file's LogState (no hint yet: the store writes it once it has
      # adopted the state); on any failure, an interrupt included, the half-written copy goes and
      # the old log stays.
      # Only records before +judged_below+ (nil: all) are offered to +evict+; later ones are kept.
      #: (LogFile, Index, untyped, ?Integer?) -> LogState
      def run(old, index, evict = nil, judged_below = nil)
        remove_stale_temp_files
        tmp = "#{@path}.compact.#{Process.pid}.#{Random.urandom(8).unpack1("H*")}"
        # Opened for append and kept: after the rename this descriptor is the new log, even if
        # another process compacts again right away. Created exclusively, never through a symlink.
        out = Trust.create_file(tmp, File::RDWR | File::APPEND, @shared)
        renamed = false
        begin
          map, live, written = copy_live(old, index, out, evict, judged_below)
          Format.fdatasync(out)
          File.rename(tmp, @path)
          renamed = true
        ensure
          unless renamed
            BinaryFile.close_quietly(out)
            BinaryFile.unlink_quietly(tmp)
          end
        end
        fsync_dir
        file = LogFile.new(@path, out, true)
        old.close
        LogState.new(file, Index.new(map, [live, 0, 0, 0, 0]), written, -1, nil, nil)
      end

      private

      # The log size its file header recorded (at its first write, or by the compaction that
      # made it); read once per file.
      def baseline(file)
        return @baseline[1] if @baseline && @baseline[0] == file.ino

        @baseline = [file.ino, Format.header_baseline(file.pread(Format::FILE_HEADER_SIZE, 0))]
        @baseline[1]
      end

      # Returns [new map, live bytes, bytes written].
      def copy_live(old, index, out, evict, judged_below)
        kept = kept_records(old, index, evict, judged_below)
        buf = Format.file_header(Format::FILE_HEADER_SIZE + kept.sum { |_, packed| packed >> Format::OFFSET_BITS })
        written = 0
        live = 0
        map = {}
        kept.each do |key, packed|
          len = packed >> Format::OFFSET_BITS
          rec = old.pread(len, packed & Format::OFFSET_MASK)
          next unless Format.verify(rec, key) # a damaged record is dropped, never copied

          map[key] = (len << Format::OFFSET_BITS) | (written + buf.bytesize)
          live += len
          buf << rec
          next if buf.bytesize < CHUNK

          written += write_all(out, buf)
          buf = String.new(encoding: Encoding::BINARY)
        end
        written += write_all(out, buf)
        [map, live, written]
      end

      # [[key, packed], ...] of the live records +evict+ keeps (it may read other keys' values).
      def kept_records(old, index, evict, judged_below)
        return index.map.to_a unless evict

        read = lambda do |key|
          packed = index.lookup(key)
          packed && old.read_value(key, packed)
        end
        judged_below ||= Float::INFINITY
        index.map.reject do |key, packed|
          (packed & Format::OFFSET_MASK) < judged_below && evict.call(key, read, packed >> Format::OFFSET_BITS)
        end
      end

      def write_all(io, buf)
        done = 0
        done += io.syswrite(done.zero? ? buf : buf.byteslice(done, buf.bytesize - done)) while done < buf.bytesize
        done
      end

      def fsync_dir
        File.open(File.dirname(@path), File::RDONLY, binmode: true) { |d| d.fsync }
      rescue SystemCallError, IOError
        nil # some file systems refuse fsync on a directory; the rename itself is already atomic
      end

      # Files left by a process that died mid-write (a crash or SIGKILL: every other failure
      # removes its own). We hold the lock, so no compaction is running; the other temps (hint,
      # self cache) are abandoned once older than a minute.
      def remove_stale_temp_files
        dir = File.dirname(@path)
        base = File.basename(@path).b
        old = Time.now - 60
        # Names as bytes: Dir.children answers in Encoding.default_external, which an app may set
        # to one that is not ASCII-compatible.
        Dir.children(dir, encoding: Encoding::BINARY).each do |name|
          next unless name.start_with?(base)

          full = File.join(dir.b, name)
          rest = name.byteslice(base.bytesize, name.bytesize)
          if rest.start_with?(".compact.") || rest.match?(/\A\.compile-\d+-\h+\.jobs\z/n) # (jobs: versions with a worker)
            BinaryFile.unlink_quietly(full)
          elsif rest.match?(/\A\.(hint|self-\h+)\.tmp\./n)
            BinaryFile.unlink_quietly(full) if (File.mtime(full) < old rescue false)
          end
        end
      rescue SystemCallError
        nil
      end
    end
  end
end

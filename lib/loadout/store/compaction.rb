# frozen_string_literal: true

require_relative "../binary_file"

module Loadout
  class Store
    # Compaction: under the append lock, copy every live record (re-verified, byte for byte) into a
    # new file, fdatasync it, rename it over the log and fsync the directory. Readers keep reading
    # the old inode through their open descriptor, so they never wait; writers in other processes
    # see the inode change after taking the lock and reopen before appending (Writer#with_write_lock).
    module Compaction # :nodoc:
      CHUNK = 8 << 20

      private

      # +evict+: nil, or a callable (key, read, record bytes) -> true to leave the record out.
      def compact_locked(old, evict = nil)
        remove_stale_temp_files
        tmp = "#{@path}.compact.#{Process.pid}.#{Random.urandom(8).unpack1("H*")}"
        # Opened for append and kept: after the rename this descriptor is the new log, even if
        # another process compacts again right away. Created exclusively, never through a symlink.
        out = Trust.create_file(tmp, File::RDWR | File::APPEND, @shared)
        renamed = false
        begin
          map, live, written = copy_live(old, out, evict)
          Format.fdatasync(out)
          File.rename(tmp, @path)
          renamed = true
        ensure
          # Any failure, an interrupt included: the half-written copy goes, the old log stays.
          unless renamed
            BinaryFile.close_quietly(out)
            BinaryFile.unlink_quietly(tmp)
          end
        end
        fsync_dir
        @file = LogFile.new(@path, out, true)
        old.close # releases the old lock; waiting writers find the new inode
        @index = Index.new(map, [live, 0, 0, 0, 0])
        @end = written
        @hint_end = @end if Hint.write(@path, @file, @index, @end, @shared)
      end

      # Returns [new map, live bytes, bytes written].
      def copy_live(old, out, evict)
        kept = kept_records(old, evict)
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
      def kept_records(old, evict)
        return @index.map.to_a unless evict

        read = lambda do |key|
          packed = @index.lookup(key)
          packed && old.read_value(key, packed)
        end
        @index.map.reject { |key, packed| evict.call(key, read, packed >> Format::OFFSET_BITS) }
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

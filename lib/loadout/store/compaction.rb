# frozen_string_literal: true

module Loadout
  class Store
    # Compaction: under the append lock, copy every live record (re-verified, byte for byte) into a
    # new file, fdatasync it, rename it over the log and fsync the directory. Readers keep reading
    # the old inode through their open descriptor, so they never wait; writers in other processes
    # see the inode change after taking the lock and reopen before appending (Writer#with_write_lock).
    module Compaction # :nodoc:
      CHUNK = 8 << 20

      private

      def compact_locked(old)
        remove_stale_temp_files
        tmp = "#{@path}.compact.#{Process.pid}.#{Random.urandom(8).unpack1("H*")}"
        # Opened for append and kept: after the rename this descriptor is the new log, even if
        # another process compacts again right away. Created exclusively, never through a symlink.
        out = Trust.create_file(tmp, File::RDWR | File::APPEND, @shared)
        begin
          map, live, written = copy_live(old, out)
          Format.fdatasync(out)
          File.rename(tmp, @path)
        rescue StandardError
          out.close
          unlink_quietly(tmp)
          raise
        end
        fsync_dir
        @file = LogFile.new(@path, out, true)
        old.close # releases the old lock; waiting writers find the new inode
        @index = Index.new(map, [live, 0, 0, 0, 0])
        @end = written
        @hint_end = @end if Hint.write(@path, @file, @index, @end, @shared)
      end

      # Returns [new map, live bytes, bytes written].
      def copy_live(old, out)
        buf = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::META, Format::FILE_HEADER_KEY, "")
        written = 0
        live = 0
        map = {}
        @index.each_pair do |key, packed|
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

      def write_all(io, buf)
        done = 0
        done += io.syswrite(done.zero? ? buf : buf.byteslice(done, buf.bytesize - done)) while done < buf.bytesize
        done
      end

      def fsync_dir
        File.open(File.dirname(@path), File::RDONLY) { |d| d.fsync }
      rescue SystemCallError, IOError
        nil # some file systems refuse fsync on a directory; the rename itself is already atomic
      end

      # Temp files left by a compaction, hint or self cache write that died (we hold the lock, so
      # no compaction is running; other temps older than a minute are abandoned).
      def remove_stale_temp_files
        dir = File.dirname(@path)
        base = File.basename(@path)
        Dir.children(dir).each do |name|
          full = File.join(dir, name)
          if name.start_with?("#{base}.compact.")
            unlink_quietly(full)
          elsif name.start_with?("#{base}.hint.tmp.") || (name.start_with?("#{base}.self-") && name.include?(".tmp."))
            unlink_quietly(full) if (File.mtime(full) < Time.now - 60 rescue false)
          end
        end
      rescue SystemCallError
        nil
      end

      def unlink_quietly(path)
        File.unlink(path)
      rescue SystemCallError
        nil
      end
    end
  end
end

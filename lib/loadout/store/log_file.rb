# frozen_string_literal: true

require_relative "../trust"
require_relative "format"

module Loadout
  class Store
    # One open store file: positional reads, the append lock, one write(2) per append, its file
    # header (the size it had when made, and its log id), and the check that tells a writer
    # another process compacted (renamed a new file over) it. Opened through the DirHandle of its
    # directory, by name, never by path.
    class LogFile # :nodoc:
      # Linux writes at most 0x7ffff000 bytes per write(2); bigger batches are split by the caller.
      MAX_WRITE = 64 << 20

      # Opens and checks the store file +name+ in +dir+ (Trust: never through a symlink, a regular
      # file of this user or root, not writable by others); raises Trust::Refused or SystemCallError.
      #: (Trust::DirHandle, String, bool) -> LogFile
      def self.open(dir, name, writable)
        flags = writable ? File::RDWR | File::CREAT | File::APPEND : File::RDONLY
        io, st = dir.open_checked(name, flags)
        new(dir, name, io, writable, st)
      end

      attr_reader :dev, :ino, :io

      def initialize(dir, name, io, writable, st = io.stat)
        if st.directory?
          io.close
          raise Errno::EISDIR, dir.path_of(name)
        end
        @dir = dir
        @name = name
        @io = io
        @writable = writable
        @dev = st.dev
        @ino = st.ino
        @fd = io.fileno
        @header = nil # [baseline, log id], read once (see #header)
        # Read per get and per append (hot path: see ARCHITECTURE.md)
        @native = BACKEND == :native ? Native : nil
        @format = Format
        @lock_ex = File::LOCK_EX
        @lock_un = File::LOCK_UN
      end

      def writable?
        @writable
      end

      def size
        @io.size # (fstat, without a File::Stat object: a cold boot appends once per file)
      end

      # [the log size its file header recorded, its log id (nil: none, or an older loadout's
      # file)]. Read once the file holds a header; [0, nil] while it is shorter.
      def header
        @header || begin
          head = pread(Format::FILE_HEADER_SIZE, 0)
          found = Format.read_header(head)
          @header = found if head.bytesize == Format::FILE_HEADER_SIZE || found[1]
          found
        end
      end

      # What the writer of the file's first record, or the compaction that made the file, wrote
      # into its header.
      def header=(baseline_and_id)
        @header = baseline_and_id
      end

      def id
        header[1]
      end

      # Up to len bytes at off (fewer at EOF); pread never moves a shared file offset, so readers
      # need no lock.
      def pread(len, off)
        return "".b if len <= 0

        data = @io.pread(len, off)
        while data.bytesize < len
          more = @io.pread(len - data.bytesize, off + data.bytesize)
          data << more
        end
        data
      rescue EOFError
        data || "".b
      end

      # Up to len bytes at off read into +buf+ (its bytes replaced; fewer at EOF), which is
      # returned: one buffer reused for every window of a long read.
      def pread_into(buf, len, off)
        buf.clear
        return buf if len <= 0

        @io.pread(len, off, buf)
        buf << @io.pread(len - buf.bytesize, off + buf.bytesize) while buf.bytesize < len
        buf
      rescue EOFError
        buf
      end

      # The value of the PUT record for +key+ at +packed+ ((length << Format::OFFSET_BITS) |
      # offset, as the key map stores it), or nil when the record is short or fails its header,
      # key or CRC check. Read errors raise. Native: one pread into the String that is returned.
      def read_value(key, packed) #: (String, Integer) -> String?
        return @native.store_read_value(@fd, packed, key) if @native

        @format.verify(pread(packed >> Format::OFFSET_BITS, packed & Format::OFFSET_MASK), key)
      end

      def lock
        @io.flock(@lock_ex)
      end

      def unlock
        @io.flock(@lock_un) unless @io.closed?
      end

      # True when the name in the directory now names another file (compaction renamed a new one
      # over ours) or none.
      def replaced?
        !@dir.same_file?(@name, @io)
      end

      # Appends buf with one write(2); +at+ is the current end of file (the caller holds the lock
      # and validated it). A short or failed write is cut back to +at+ so no partial record stays
      # behind (ENOSPC first shows up as a short count), then the error is raised.
      def append(buf, at)
        written = @io.syswrite(buf)
        if written != buf.bytesize
          raise Errno::ENOSPC, "short write (#{written} of #{buf.bytesize} bytes) to #{@dir.path_of(@name)}"
        end
      rescue SystemCallError, IOError
        begin
          @io.truncate(at)
        rescue SystemCallError, IOError
          nil # the next writer's tail check removes what we could not
        end
        raise
      end

      def truncate(len)
        @io.truncate(len)
      end

      def fdatasync
        Format.fdatasync(@io)
      end

      def close
        @io.close unless @io.closed?
      end
    end
  end
end

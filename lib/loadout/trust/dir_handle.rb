# frozen_string_literal: true

module Loadout
  module Trust
    # A directory held open, and every file operation loadout does in it, by name relative to
    # the open directory: open, create, read, rename, unlink, list. The path that named the
    # directory is used only once, to open it; afterwards the path may be renamed, or replaced by
    # a symlink to somewhere else, and nothing here follows it (root writing into a directory
    # another user points to). Names are single components, never opened through a symlink.
    #
    # Native: openat(2), renameat(2), unlinkat(2), fstatat(2) on the directory's descriptor. The
    # pure-Ruby twin reaches the open directory through /proc/self/fd/N/ (Linux: the kernel
    # resolves it to the open directory, not to its path). Where there is no /proc (macOS, the
    # BSDs) the twin uses the path, checking before each operation that it still names the
    # directory it opened; a swap between that check and the operation is not caught there.
    class DirHandle # :nodoc:
      # Opens the directory +path+; raises SystemCallError (ENOENT, ENOTDIR, EACCES...).
      #: (String, bool) -> DirHandle
      # (+native+ and +proc_fs+ pick the way names are resolved; tests ask for each.)
      def self.open(path, shared, native: BACKEND == :native, proc_fs: true)
        begin
          io = File.new(path, File::RDONLY | File::NONBLOCK, binmode: true)
        rescue Errno::EISDIR # JRuby opens no directory as an IO: by path, checked before each step
          st = File.stat(path)
          return new(path, nil, shared, native: false, proc_fs: false, stat: st) if st.directory?

          raise
        end
        begin
          st = io.stat
          raise Errno::ENOTDIR, path unless st.directory?

          new(path, io, shared, native: native, proc_fs: proc_fs, stat: st)
        rescue StandardError
          io.close
          raise
        end
      end

      # The directory's path, for messages (and the twin without /proc).
      attr_reader :path

      def initialize(path, io, shared, native: BACKEND == :native, proc_fs: true, stat: io.stat)
        @path = path
        @io = io # nil: no descriptor for the directory (JRuby)
        @closed = false
        @shared = shared
        @native = native ? Native : nil
        @identity = [stat.dev, stat.ino]
        @at_path = false # the twin without /proc: names are joined to the path, checked first
        @at = if @native
                io.fileno
              elsif proc_fs && io && (proc = "/proc/self/fd/#{io.fileno}") && same_dir?(proc)
                proc
              else
                @at_path = true
                path
              end
      end

      # How names are resolved: :descriptor (native), :proc (the twin through /proc/self/fd/N)
      # or :path (the twin elsewhere).
      def resolution
        return :descriptor if @native

        @at_path ? :path : :proc
      end

      def shared?
        @shared
      end

      # fstat of the open directory (or, without a descriptor, stat of the path it still names).
      def stat
        @io ? @io.stat : File.stat(at)
      end

      # Whether +path+ names this directory (the one open here) now.
      def named_by?(path)
        same_dir?(path)
      end

      # Where names are resolved: the descriptor (native), or the base path the twin joins names
      # to. Raises Errno::ESTALE when the twin, working by path, finds it names another directory.
      def at
        return @at unless @at_path
        raise Errno::ESTALE, "#{@path} was replaced since it was opened" unless same_dir?(@path)

        @at
      end

      # +name+ in this directory, for messages.
      def path_of(name)
        File.join(@path, name)
      end

      # Opens +name+ with +flags+ (plus O_NOFOLLOW|O_NONBLOCK, binary), creating it with +perm+
      # when flags say so. Raises SystemCallError (ELOOP: a symlink).
      #: (String, Integer, ?Integer) -> File
      def open(name, flags, perm = Trust.file_mode(@shared))
        if @native
          fd = @native.trust_openat(@at, name, flags, perm)
          begin
            File.for_fd(fd, flags & (File::RDONLY | File::WRONLY | File::RDWR | File::APPEND), binmode: true,
                                                                                               autoclose: true)
          rescue StandardError
            IO.for_fd(fd).close
            raise
          end
        else
          File.new(File.join(at, name), flags | OPEN_FLAGS, perm, binmode: true)
        end
      end

      # Opens the cache file +name+ and checks it as opened (Trust.check_io!); returns [io,
      # stat]. Raises Refused (closing it) or SystemCallError; a symlink is Refused.
      #: (String, Integer) -> [File, File::Stat]
      def open_checked(name, flags)
        io = open(name, flags)
        begin
          [io, Trust.check_io!(io, path_of(name), @shared)]
        rescue StandardError
          io.close
          raise
        end
      rescue Errno::ELOOP, Errno::EMLINK => e
        raise Refused, [:symlink, path_of(name), 0, 0, 0, e.errno]
      end

      # The bytes of the cache file +name+ (checked as opened), nil when there is none; raises
      # Refused or SystemCallError (see Trust.read).
      def read(name)
        data = checks.trust_read(at, name, Trust.flags(@shared))
        return data unless data.is_a?(Array)

        data[1] = path_of(name)
        raise SystemCallError.new(data[1], data[5]) if data[0] == :error

        raise Refused, data
      end

      # nil when +name+ is missing or a regular file that passes the rule, else a report (a look
      # without opening it: see Native.trust_lstat).
      def lstat_problem(name)
        report = checks.trust_lstat(at, name, Trust.flags(@shared))
        report[1] = path_of(name) if report
        report
      end

      # A new file +name+ (O_CREAT|O_EXCL|O_NOFOLLOW: it must not exist, not even as a symlink)
      # opened with +flags+, with exactly the cache's file mode whatever the umask.
      #: (String, Integer) -> File
      def create(name, flags)
        io = open(name, flags | File::CREAT | File::EXCL)
        io.chmod(Trust.file_mode(@shared))
        io
      end

      # Creates a new file named "#{prefix}#{pid}.#{random}" exclusively, yields it, closes it.
      # Returns its name; on any failure (an interrupt included) the file is removed again.
      #: (String) { (File) -> void } -> String
      def create_exclusive(prefix)
        name = "#{prefix}#{Process.pid}.#{Random.urandom(8).unpack1("H*")}"
        io = create(name, File::WRONLY)
        written = false
        begin
          yield io
          io.close # flushes: a full disk or a file size limit fails here
          written = true
        ensure
          unless written
            begin
              io.close unless io.closed?
            rescue SystemCallError, IOError
              nil
            end
            unlink_quietly(name)
          end
        end
        name
      end

      # Writes +data+ to +name+ atomically (an exclusive temp file "NAME.tmp.PID.RANDOM" renamed
      # over it). Returns true when it did; a failure leaves the old file (or none) and no temp.
      #: (String, String) -> bool
      def write_atomically(name, data)
        tmp = nil
        renamed = false
        tmp = create_exclusive("#{name}.tmp.") { |io| io.write(data) }
        rename(tmp, name)
        renamed = true
      rescue SystemCallError, IOError
        false
      ensure
        unlink_quietly(tmp) if tmp && !renamed # an interrupt between the write and the rename too
      end

      def rename(from, to)
        if @native
          @native.trust_renameat(@at, from, to)
        else
          base = at
          File.rename(File.join(base, from), File.join(base, to))
        end
        nil
      end

      def unlink(name)
        @native ? @native.trust_unlinkat(@at, name) : File.unlink(File.join(at, name))
        nil
      end

      def unlink_quietly(name)
        unlink(name)
      rescue SystemCallError
        nil
      end

      # Whether +name+ is the file open as +io+ (natively without following a symlink; the twin's
      # File.identical? follows one: a symlink to the very file open is taken for it, and writes
      # still go to the open file).
      #: (String, IO) -> bool
      def same_file?(name, io)
        return @native.trust_same_file_at(@at, name, io) if @native

        File.identical?("#{at}/#{name}", io)
      rescue SystemCallError
        false
      end

      # The modification time of +name+ (opened without following a symlink).
      def mtime(name)
        io = open(name, File::RDONLY)
        io.mtime
      ensure
        io&.close
      end

      # The names in the directory (binary Strings: a name is bytes, whatever the app's
      # Encoding.default_external).
      def children
        return @native.trust_children_at(@at) if @native

        Dir.children(at, encoding: Encoding::BINARY)
      end

      # Makes renames and unlinks in the directory durable (where the file system allows it).
      def fsync
        @io&.fsync
      rescue SystemCallError, IOError
        nil # some file systems refuse fsync on a directory; a rename itself is already atomic
      end

      def close
        @closed = true
        @io.close unless @io.nil? || @io.closed?
      end

      def closed?
        @io ? @io.closed? : @closed
      end

      def inspect
        "#<#{self.class} #{@path}#{" (closed)" if closed?}>"
      end

      private

      # Native or Checks: the trust_read/trust_lstat of the way this handle resolves names.
      def checks
        @native || Checks
      end

      def same_dir?(path)
        st = File.stat(path)
        st.dev == @identity[0] && st.ino == @identity[1]
      rescue SystemCallError
        false
      end
    end
  end
end

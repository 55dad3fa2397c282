# frozen_string_literal: true

require_relative "error"
require_relative "native"

module Loadout
  # The cache is a code-execution boundary: whoever can write it can make the app run their code
  # (a planted ISeq record runs as the app's user). So loadout follows OpenSSH's rule for ~/.ssh:
  # before anything is read, the cache dir, its parents up to the app root, and every cache file
  # as opened (fstat of the descriptor, O_NOFOLLOW|O_NONBLOCK) must be
  # - owned by this process's effective uid or by root,
  # - not writable by others, nor by the group unless the cache is declared shared
  #   (trust_shared_cache: true, LOADOUT_TRUST_SHARED_CACHE=1) or the group is the owner's
  #   private group,
  # - a directory or a regular file (never a symlink, FIFO or device for a file).
  # A cache that fails is neither read nor written (one warning says what and how to fix it).
  # What loadout creates gets 0700/0600 (0750/0640 when shared), whatever the umask.
  module Trust # :nodoc:
    SHARED = 1    # a group-writable file or directory is accepted
    ANY_OWNER = 2 # only the type is checked, symlinks are followed (a source file)
    # Every cache file is opened with these: a symlink fails (ELOOP), a FIFO does not block.
    OPEN_FLAGS = File::NOFOLLOW | File::NONBLOCK | File::BINARY

    # Loaded when needed: the Ruby twins (pure backend), the words of a warning (a refusal).
    autoload :Checks, File.expand_path("trust/checks", __dir__)
    autoload :Words, File.expand_path("trust/words", __dir__)

    # A cache file or directory failed the rule; +report+ is [problem, path, uid, gid, mode, errno].
    class Refused < Error
      def initialize(report)
        @report = report
        super(Words.problem(report))
      end

      attr_reader :report
    end

    @backend = BACKEND == :native ? Native : nil # nil: Checks, loaded on first use
    @walked = nil # see remember_walk

    class << self
      def flags(shared)
        shared ? SHARED : 0
      end

      def file_mode(shared)
        shared ? 0o640 : 0o600
      end

      def dir_mode(shared)
        shared ? 0o750 : 0o700
      end

      # The bytes of the cache file +path+, or nil when there is none; raises Refused when it
      # fails the rule, SystemCallError when it cannot be read (EACCES, EIO...).
      #: (String, bool) -> String?
      def read(path, shared)
        data = backend.trust_read(path, flags(shared))
        return data unless data.is_a?(Array)
        raise SystemCallError.new(path, data[5]) if data[0] == :error

        raise Refused, data
      end

      # The bytes of a source file (any owner, symlinks followed), or nil when it is missing,
      # unreadable, or not a regular file (a FIFO would block the reader forever).
      #: (String) -> String?
      def read_source(path)
        data = backend.trust_read(path, ANY_OWNER)
        data.is_a?(String) ? data : nil
      end

      # nil when +dir+ and its parents (up to +root+, see Checks.trust_walk) pass, else a report.
      def walk(dir, root, shared)
        backend.trust_walk(dir, root, flags(shared))
      end

      # Raises Refused unless +io+, just opened at +path+ with OPEN_FLAGS, passes the rule. A file
      # this process has just created (empty, its own) gets exactly the mode loadout gives files.
      #: (IO, String, bool) -> File::Stat
      def check_io!(io, path, shared)
        st = io.stat
        report = check(st, false, flags(shared), path)
        raise Refused, report if report

        mode = file_mode(shared)
        io.chmod(mode) if st.size.zero? && st.uid == Process.euid && (st.mode & 0o777) != mode
        st
      end

      # nil when +st+ passes (want_dir: a directory is expected, else a regular file), else a
      # report. The rule of trust.c's lo_trust_check.
      def check(st, want_dir, flags, path)
        problem = if want_dir ? !st.directory? : !st.file?
                    want_dir ? :not_directory : :not_regular
                  elsif (flags & ANY_OWNER) != 0
                    nil
                  elsif st.uid != Process.euid && st.uid != 0
                    :owner
                  elsif (st.mode & 0o002) != 0
                    :other_writable
                  elsif (st.mode & 0o020) != 0 && (flags & SHARED).zero? && !private_group?(st.gid)
                    :group_writable
                  end
        problem && [problem, path, st.uid, st.gid, st.mode, 0]
      end

      # Whether +gid+ is the effective user's private group (see trust.h).
      def private_group?(gid)
        @backend ? @backend.trust_private_group?(gid) : Checks.trust_private_group?(gid)
      end

      # Opens +path+ with +flags+ (plus OPEN_FLAGS) and checks it; returns [io, stat]. Raises
      # Refused (closing it) or SystemCallError; ELOOP (a symlink) becomes Refused.
      #: (String, Integer, bool) -> [File, File::Stat]
      def open_file(path, flags, shared)
        io = File.new(path, flags | OPEN_FLAGS, file_mode(shared), binmode: true)
        begin
          [io, check_io!(io, path, shared)]
        rescue StandardError
          io.close
          raise
        end
      rescue Errno::ELOOP, Errno::EMLINK => e
        raise Refused, [:symlink, path, 0, 0, 0, e.errno]
      end

      # Creates a new file named "#{prefix}#{pid}.#{random}#{suffix}" exclusively (O_EXCL|O_NOFOLLOW,
      # so nothing planted under that name is ever written through) and yields it. Returns its path.
      #: (String, bool, ?suffix: String) { (File) -> void } -> String
      def create_exclusive(prefix, shared, suffix: "")
        path = "#{prefix}#{Process.pid}.#{Random.urandom(8).unpack1("H*")}#{suffix}"
        io = create_file(path, File::WRONLY, shared)
        written = false
        begin
          yield io
          io.close # flushes: a full disk or a file size limit fails here
          written = true
        ensure
          # Any failure, an interrupt included: the half-written file goes.
          unless written
            begin
              io.close unless io.closed?
            rescue SystemCallError, IOError
              nil
            end
            unlink_quietly(path)
          end
        end
        path
      end

      # A new file at +path+ (O_CREAT|O_EXCL|O_NOFOLLOW: it must not exist, not even as a symlink)
      # opened with +flags+, with exactly file_mode whatever the umask.
      #: (String, Integer, bool) -> File
      def create_file(path, flags, shared)
        io = File.new(path, flags | File::CREAT | File::EXCL | OPEN_FLAGS, file_mode(shared), binmode: true)
        io.chmod(file_mode(shared))
        io
      end

      # Writes +data+ to +path+ atomically (an exclusive temp file renamed over it). Returns true
      # when it did; a failure leaves the old file (or none) and no temp file.
      #: (String, String, bool) -> bool
      def write_atomically(path, data, shared)
        tmp = nil
        renamed = false
        tmp = create_exclusive("#{path}.tmp.", shared) { |io| io.write(data) }
        File.rename(tmp, path)
        renamed = true
      rescue SystemCallError, IOError
        false
      ensure
        unlink_quietly(tmp) if tmp && !renamed # an interrupt between the write and the rename too
      end

      # mkdir -p for a directory loadout owns: every directory it creates gets dir_mode.
      def make_dirs(dir, shared)
        return if File.directory?(dir)

        parent = File.dirname(dir)
        make_dirs(parent, shared) unless parent == dir
        begin
          Dir.mkdir(dir, dir_mode(shared))
          File.chmod(dir_mode(shared), dir) # mkdir's mode went through the umask
        rescue Errno::EEXIST
          raise unless File.directory?(dir)
        end
      end

      # nil when the cache dir of +config+ passes the rule, else the report of what fails it. A
      # missing cache dir is made first (unless read-only, with dir_mode); one that cannot be made
      # is reported as :missing (see unusable?).
      #: (Config) -> Array[untyped]?
      def cache_problem(config)
        key = [config.cache_dir, config.root, config.trust_shared_cache]
        # SelfCache walked already when it ran (it reads its file before setup): false = passed.
        report = take_walk(key)
        report = walk(*key) if report.nil?
        report = nil if report == false
        if report && report[0] == :missing && !config.readonly
          begin
            make_dirs(config.cache_dir, config.trust_shared_cache)
          rescue SystemCallError
            return report
          end
          report = walk(*key)
        end
        report
      end

      # Hands cache_problem the verdict of a walk already done for +key+ (SelfCache checks the
      # cache dir before setup, to read its own file from it): +report+ is false when it passed.
      # Used once: the next cache_problem for +key+ takes it.
      def remember_walk(key, report) #: (Array[untyped], untyped) -> void
        @walked = [key, report]
      end

      def take_walk(key)
        walked = @walked
        @walked = nil
        walked && walked[0] == key ? walked[1] : nil
      end

      # Whether a cache_problem report only says the cache dir is not there to use (missing, or
      # not a directory): nothing can be read through it, the caller's usability checks say why.
      def unusable?(report)
        %i[missing not_directory].include?(report[0])
      end

      # The one warning for a cache that fails the rule.
      def warn_refused(report, cache_dir, shared)
        warn "loadout: not using the cache in #{cache_dir}: #{Words.problem(report)}; whoever can write there " \
             "can make this program run their code. Fix: #{Words.fix(report, shared)}. Until then loadout " \
             "neither reads nor writes the cache"
      end

      def backend
        @backend || Checks
      end

      def unlink_quietly(path)
        File.unlink(path)
      rescue SystemCallError
        nil
      end
    end
  end
end

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
  #   private group (one no other user can be in: see Checks.trust_private_group?),
  # - a directory or a regular file (never a symlink, FIFO or device for a file).
  # Above the app root the walk ends at a sticky world-writable directory that root or this
  # user owns (/tmp). Once checked, the cache dir is held open (DirHandle) and every cache file
  # is opened, created, renamed and removed through it: a path swapped afterwards (the dir
  # renamed, a symlink put in its place) is never followed.
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
      # fails the rule, SystemCallError when it cannot be read (EACCES, EIO...). +at+: see
      # DirHandle#at (nil: +path+ is a path).
      #: (String, bool, ?untyped) -> String?
      def read(path, shared, at = nil)
        data = backend.trust_read(at, path, flags(shared))
        return data unless data.is_a?(Array)
        raise SystemCallError.new(path, data[5]) if data[0] == :error

        raise Refused, data
      end

      # The bytes of a source file (any owner, symlinks followed), or nil when it is missing,
      # unreadable, or not a regular file (a FIFO would block the reader forever).
      #: (String) -> String?
      def read_source(path)
        data = backend.trust_read(nil, path, ANY_OWNER)
        data.is_a?(String) ? data : nil
      end

      # nil when +dir+ and its parents (up to +root+, see Checks.trust_walk) pass, else a report.
      def walk(dir, root, shared)
        backend.trust_walk(dir, root, flags(shared))
      end

      # Walks +dir+ (see #walk) and holds the directory that passed open: [nil, DirHandle], or
      # [report, nil]. The directory opened after the walk must be the one the walk reached (the
      # path still names it) and pass the rule itself.
      #: (String, String?, bool) -> [Array[untyped]?, DirHandle?]
      def check_dir(dir, root, shared)
        report = walk(dir, root, shared)
        return [report, nil] if report

        handle = DirHandle.open(dir, shared)
        report = check(handle.stat, true, flags(shared), dir)
        report ||= [:changed, dir, 0, 0, 0, 0] unless handle.named_by?(dir)
        return [nil, handle] unless report

        handle.close
        [report, nil]
      rescue SystemCallError => e
        [Checks.errno_report(e, dir) || [:missing, dir, 0, 0, 0, e.errno], nil]
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

      # The cache dir of +config+, checked and held open: [nil, DirHandle] when it passes the
      # rule, else [report, nil]. A missing cache dir is made first (unless read-only, with
      # dir_mode); one that cannot be made is reported as :missing (see unusable?).
      #: (Config) -> [Array[untyped]?, DirHandle?]
      def cache_dir(config)
        key = [config.cache_dir, config.root, config.trust_shared_cache]
        # SelfCache checked already when it ran (it reads its file before setup).
        report, handle = take_walk(key) || check_dir(*key)
        if report && report[0] == :missing && !config.readonly
          begin
            make_dirs(config.cache_dir, config.trust_shared_cache)
          rescue SystemCallError
            return [report, nil]
          end
          report, handle = check_dir(*key)
        end
        [report, handle]
      end

      # Hands cache_dir the verdict of a check already done for +key+ (SelfCache checks the
      # cache dir before setup, to read its own file from it): [report, handle] as check_dir
      # returns it. Used once: the next cache_dir for +key+ takes it (an unused one is closed).
      def remember_walk(key, verdict) #: (Array[untyped], [Array[untyped]?, DirHandle?]) -> void
        @walked&.last&.last&.close
        @walked = [key, verdict]
      end

      def take_walk(key)
        walked = @walked
        @walked = nil
        return walked[1] if walked && walked[0] == key

        walked&.last&.last&.close
        nil
      end

      # Whether a cache_dir report only says the cache dir is not there to use (missing, or
      # not a directory): nothing can be read through it, the caller's usability checks say why.
      def unusable?(report)
        %i[missing not_directory].include?(report[0])
      end

      # The one warning for a cache that fails the rule (or could not be checked).
      def warn_refused(report, cache_dir, shared)
        fix = Words.fix(report, shared)
        if Words.untrusted?(report)
          why = "; whoever can write there can make this program run their code"
        elsif !fix.include?("LOADOUT_CACHE_DIR")
          fix = "#{fix}, or set LOADOUT_CACHE_DIR to a directory this process can use"
        end
        warn "loadout: not using the cache in #{Words.shown(cache_dir)}: #{Words.problem(report)}#{why}. " \
             "Fix: #{fix}. Until then loadout neither reads nor writes the cache"
      end

      def backend
        @backend || Checks
      end
    end
  end
end

require_relative "trust/dir_handle"

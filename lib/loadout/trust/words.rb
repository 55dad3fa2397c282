# frozen_string_literal: true

module Loadout
  module Trust
    # What a trust report ([problem, path, uid, gid, mode, errno]) says, and how to fix it, in the
    # words of one warning or error. Users and groups are given by number: looking names up would
    # load Etc into the app. Paths are shown through #shown: a path comes from the environment
    # (LOADOUT_CACHE_DIR), and its bytes must not reach a terminal as escape sequences.
    module Words # :nodoc:
      # st_mode & S_IFMT
      TYPES = { 0o010000 => "a FIFO", 0o020000 => "a character device", 0o040000 => "a directory",
                0o060000 => "a block device", 0o100000 => "a regular file", 0o120000 => "a symlink",
                0o140000 => "a socket" }.freeze
      # Paths longer than this are shown by their two ends.
      SHOWN_MAX = 160

      module_function

      def problem(report)
        kind, raw, uid, gid, mode, errno = report
        path = shown(raw)
        found = "owner uid #{uid}, group gid #{gid}, mode #{format("%04o", mode & 0o7777)}"
        case kind
        when :owner
          "#{path} is owned by another user (#{found}; this process runs as uid #{Process.euid})"
        when :other_writable then "#{path} is writable by others (#{found})"
        when :group_writable then "#{path} is writable by its group (#{found})"
        when :symlink
          return "#{path} is a symlink (cache files are never opened through one)" if mode.zero?

          "#{path} is a symlink owned by another user (#{found})"
        when :not_regular then "#{path} is #{type_name(mode)}, not a regular file"
        when :not_directory then "#{path} is not a directory (#{type_name(mode)})"
        when :missing then "#{path} does not exist"
        when :changed then "#{path} was replaced while it was being checked"
        else
          return "#{path} is too long to use (#{raw.to_s.bytesize} bytes; ENAMETOOLONG)" if too_long?(report)

          "#{path} cannot be checked (#{errno_name(errno)})"
        end
      end

      def fix(report, shared)
        kind, raw, _uid, gid = report
        path = shown(raw)
        case kind
        when :owner
          "chown #{Process.euid} #{path} (or remove it: loadout recreates what it needs), or set LOADOUT_CACHE_DIR " \
            "to a directory of your own"
        when :other_writable then "chmod o-w #{path}"
        when :group_writable
          shared_fix = ", or, if everyone in group #{gid} may write the cache, set LOADOUT_TRUST_SHARED_CACHE=1 " \
                       "(Loadout.setup(trust_shared_cache: true))"
          "chmod g-w #{path}#{shared_fix unless shared}"
        when :symlink then "remove #{path} (loadout recreates what it needs)"
        when :not_regular, :not_directory then "remove #{path} (loadout recreates what it needs)"
        when :changed then "leave the cache dir in place while the program starts"
        else
          return "set LOADOUT_CACHE_DIR to a shorter path" if too_long?(report)

          "check #{path} and its permissions"
        end
      end

      # Whether the report is about a trust problem (something another user could have written),
      # not a path that could not be looked at.
      def untrusted?(report)
        !%i[error changed].include?(report[0])
      end

      def too_long?(report)
        report[0] == :error && report[5] == Errno::ENAMETOOLONG::Errno
      end

      # +path+ as a warning may print it: control characters (ANSI escapes included), C1 controls
      # and bytes that are not UTF-8 escaped as String#inspect does (then quoted), and a path
      # longer than SHOWN_MAX characters cut to its two ends.
      #: (String?) -> String
      def shown(path)
        text = path.to_s.dup.force_encoding(Encoding::UTF_8)
        if !text.valid_encoding? || text.match?(/[\u0000-\u001f\u007f-\u009f]/)
          text = text.inspect
          utf8 = Encoding::UTF_8
          text = text.encode(utf8, invalid: :replace, undef: :replace) unless text.encoding == utf8
        end
        return text if text.length <= SHOWN_MAX

        "#{text[0, SHOWN_MAX / 2]}...#{text[-(SHOWN_MAX / 2)..]}"
      end

      def type_name(mode)
        TYPES.fetch(mode & 0o170000, "of an unknown type (mode #{format("%06o", mode)})")
      end

      def errno_name(errno)
        SystemCallError.new(nil, errno).class.name.split("::").last
      rescue StandardError
        "errno #{errno}"
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  module Trust
    # Ruby twin of ext/loadout/trust.c (Native.trust_read, Native.trust_walk): the same verdicts,
    # the same report ([problem, path, uid, gid, mode, errno]), from File::Stat on descriptors
    # opened with File::NOFOLLOW|File::NONBLOCK and File.lstat for directories.
    module Checks # :nodoc:
      STICKY_PUBLIC = 0o1002 # sticky and world-writable, like /tmp

      module_function

      def check(st, want_dir, flags, path)
        Trust.check(st, want_dir, flags, path)
      end

      def trust_read(path, flags)
        oflags = File::RDONLY | File::NONBLOCK | File::BINARY
        oflags |= File::NOFOLLOW if (flags & Trust::ANY_OWNER).zero?
        File.open(path, oflags, binmode: true) do |f|
          report = check(f.stat, false, flags, path)
          return report if report

          f.binmode
          f.read
        end
      rescue SystemCallError => e
        errno_report(e, path)
      end

      # A quick look by path (no open): nil when +path+ is missing or a regular file that passes.
      def trust_lstat(path, flags)
        st = File.lstat(path)
        return [:symlink, path, 0, 0, 0, 0] if st.symlink?

        check(st, false, flags, path)
      rescue SystemCallError => e
        errno_report(e, path)
      end

      def trust_walk(dir, root, flags)
        symlinked = false
        report = walk_once(dir, root, flags) { symlinked = true }
        return report if report || !symlinked

        # A symlink in the path: the directories the real path goes through count as well.
        begin
          real_dir = File.realpath(dir)
          real_root = root && File.realpath(root)
        rescue SystemCallError => e
          return errno_report(e, real_dir ? root : dir) || [:missing, dir, 0, 0, 0, e.errno]
        end
        walk_once(real_dir, real_root, flags) { nil }
      end

      # One pass up from +dir+ (see Trust); yields when a component is a symlink.
      def walk_once(dir, root, flags)
        under_root = root && (root == "/" || dir == root || dir.start_with?("#{root}/"))
        cur = dir
        loop do
          st = File.lstat(cur)
          if st.symlink?
            return [:symlink, cur, st.uid, st.gid, st.mode, 0] if st.uid != Process.euid && st.uid != 0

            yield
            st = File.stat(cur)
          end
          # Outside the app root a sticky world-writable directory (/tmp) ends the walk.
          return nil if !under_root && !cur.equal?(dir) && st.directory? && (st.mode & STICKY_PUBLIC) == STICKY_PUBLIC

          report = check(st, true, flags, cur)
          return report if report
          return nil if under_root && cur == root

          parent = File.dirname(cur)
          return nil if parent == cur

          cur = parent
        end
      rescue SystemCallError => e
        errno_report(e, cur) || [:missing, cur, 0, 0, 0, e.errno]
      end

      # The report for an errno (nil for a missing file: there is nothing to read).
      def errno_report(error, path)
        case error
        when Errno::ENOENT, Errno::ENOTDIR then nil
        when Errno::ELOOP, Errno::EMLINK then [:symlink, path, 0, 0, 0, error.errno]
        else [:error, path, 0, 0, 0, error.errno]
        end
      end

      # Whether +gid+ is the effective user's private group: named like the user, its primary
      # group, with no other member (only asked for a group-writable file). Read from
      # /etc/passwd and /etc/group (Etc would define a constant in the app): a user known only
      # to NSS (LDAP) gets no such exception here, which errs on the safe side.
      def trust_private_group?(gid)
        user = File.foreach("/etc/passwd").map { |l| l.chomp.split(":") }.find { |f| f[2].to_i == Process.euid && f[2] }
        return false unless user && user[3].to_i == gid

        group = File.foreach("/etc/group").map { |l| l.chomp.split(":", -1) }.find { |f| f[2] && f[2].to_i == gid }
        group && group[0] == user[0] && group[3].to_s.split(",").all? { |m| m == user[0] }
      rescue SystemCallError, IOError
        false
      end
    end
  end
end

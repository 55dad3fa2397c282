# frozen_string_literal: true

module Loadout
  module Trust
    # Ruby twin of ext/loadout/trust.c (Native.trust_read, trust_lstat, trust_walk,
    # trust_private_group?): the same verdicts, the same report ([problem, path, uid, gid, mode,
    # errno]), from File::Stat on descriptors opened with File::NOFOLLOW|File::NONBLOCK and
    # File.lstat for directories. +at+ is where a name is resolved: nil (a path), or the base a
    # DirHandle reaches its directory through ("/proc/self/fd/N" on Linux).
    module Checks # :nodoc:
      STICKY_PUBLIC = 0o1002 # sticky and world-writable, like /tmp
      DB_MAX = 16 << 20 # user and group databases larger than this are not read (in doubt)
      # systemd's userdb drop-in directories: records there define users /etc/passwd does not list.
      USERDB_DIRS = %w[/etc/userdb /run/userdb /run/host/userdb /usr/local/lib/userdb /usr/lib/userdb].freeze

      module_function

      def check(st, want_dir, flags, path)
        Trust.check(st, want_dir, flags, path)
      end

      def trust_read(at, path, flags)
        oflags = File::RDONLY | File::NONBLOCK | File::BINARY
        oflags |= File::NOFOLLOW if (flags & Trust::ANY_OWNER).zero?
        File.open(at ? File.join(at, path) : path, oflags, binmode: true) do |f|
          report = check(f.stat, false, flags, path)
          return report if report

          f.binmode
          f.read
        end
      rescue SystemCallError => e
        errno_report(e, path)
      end

      # A quick look by path (no open): nil when +path+ is missing or a regular file that passes.
      def trust_lstat(at, path, flags)
        st = File.lstat(at ? File.join(at, path) : path)
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
        euid = Process.euid
        cur = dir
        loop do
          st = File.lstat(cur)
          if st.symlink?
            return [:symlink, cur, st.uid, st.gid, st.mode, 0] if st.uid != euid && st.uid != 0

            yield
            st = File.stat(cur)
          end
          # Outside the app root a sticky world-writable directory of root's or ours (/tmp) ends
          # the walk; one another user owns is that user's to rename in, so it is checked.
          if !under_root && !cur.equal?(dir) && st.directory? && (st.mode & STICKY_PUBLIC) == STICKY_PUBLIC &&
             (st.uid.zero? || st.uid == euid)
            return nil
          end

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

      # Whether +gid+ is the effective user's private group (the conditions are trust.h's, for
      # lo_trust_private_group): not 0; users and groups from files only; /etc/passwd has the
      # user with gid as its primary group and no other user with that primary group; /etc/group
      # names gid like the user, with no member but the user. Read as text (Etc would define a
      # constant in the app).
      def trust_private_group?(gid)
        return false if gid.zero? || !files_only?

        user = passwd_user(gid) or return false
        group_line = db_lines("/etc/group")&.find do |line|
          break nil if line.start_with?("+", "-")

          fields = line.split(":", 4)
          break nil if fields.size < 4 || (g = id_field(fields[2])).nil?

          g == gid
        end or return false
        name, _, _, members = group_line.split(":", 4)
        name == user && members.split(",").all? { |m| m.empty? || m == user }
      end

      # The name of the effective user when /etc/passwd gives it +gid+ as its primary group and
      # gives that primary group to no other user; nil otherwise (or when in doubt).
      def passwd_user(gid)
        lines = db_lines("/etc/passwd") or return nil
        euid = Process.euid
        name = nil
        lines.each do |line|
          return nil if line.start_with?("+", "-") # NIS compat entries stand for users listed elsewhere

          fields = line.split(":", 7)
          return nil if fields.size < 4

          uid = id_field(fields[2])
          primary = id_field(fields[3])
          return nil if uid.nil? || primary.nil?

          if uid == euid
            next if name

            return nil unless primary == gid && fields[0].bytesize < 256

            name = fields[0]
          elsif primary == gid
            return nil # another user's primary group: their processes run with it
          end
        end
        name
      end

      # Whether /etc/nsswitch.conf takes users and groups from files only ("files", and "systemd"
      # without userdb records); a missing file means files.
      def files_only?
        conf = db_text("/etc/nsswitch.conf")
        return conf == :missing if conf.is_a?(Symbol)

        systemd = false
        conf.split("\n").each do |line|
          line = line.sub(/\A[ \t]+/, "")
          next unless line.start_with?("passwd:", "group:")

          in_action = false
          sources = line.byteslice((line.start_with?("passwd:") ? 7 : 6)..).sub(/#.*/m, "")
          sources.split(/[ \t\r]+/).each do |tok|
            next if tok.empty?

            if in_action || tok.start_with?("[")
              in_action = !tok.end_with?("]")
              next
            end
            return false unless %w[files systemd].include?(tok)

            systemd = true if tok == "systemd"
          end
        end
        !(systemd && userdb_records?)
      end

      def userdb_records?
        USERDB_DIRS.any? do |dir|
          !Dir.children(dir).empty?
        rescue Errno::ENOENT, Errno::ENOTDIR
          false
        rescue SystemCallError
          true # cannot be looked at: in doubt
        end
      end

      # The lines of a user or group database that matter (no empty lines, no comments); nil when
      # it cannot be read.
      def db_lines(path)
        text = db_text(path)
        return nil if text.is_a?(Symbol)

        text.split("\n").reject { |l| l.empty? || l.start_with?("#") }
      end

      # The file's bytes; :missing or :unreadable when it cannot be read (or is not a regular
      # file of at most DB_MAX bytes).
      def db_text(path)
        File.open(path, File::RDONLY | File::NONBLOCK, binmode: true) do |f|
          st = f.stat
          return :unreadable unless st.file? && st.size <= DB_MAX

          text = f.read(DB_MAX + 4096)
          text && text.bytesize < st.size + 4096 ? text : :unreadable
        end
      rescue Errno::ENOENT
        :missing
      rescue SystemCallError, IOError
        :unreadable
      end

      def id_field(str)
        return nil unless str.match?(/\A[0-9]+\z/)

        value = str.to_i
        value <= 0xffff_ffff ? value : nil
      end
    end
  end
end

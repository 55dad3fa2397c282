# frozen_string_literal: true

require_relative "../trust"

module Loadout
  class Store
    # Turns what went wrong into the words of one warning or error: what happened and how to fix it.
    module Problems # :nodoc:
      module_function

      # [problem, fix] for a SystemCallError/IOError met while opening or writing +path+.
      def describe(error, path)
        dir = Trust::Words.shown(File.dirname(path))
        case error
        when Errno::EACCES, Errno::EPERM
          ["permission denied (#{errno_name(error)})",
           "make #{dir} writable by this user, point the cache elsewhere, or open it readonly"]
        when Errno::EROFS
          ["the file system is read-only (EROFS)", "put the cache on a writable file system, or open it readonly"]
        when Errno::ENOSPC, Errno::EDQUOT
          ["no space left on the device (#{errno_name(error)})", "free some disk space or move the cache"]
        when Errno::EISDIR
          ["is a directory, not a store file", "remove that directory or choose another path"]
        when Errno::EEXIST
          ["a file is in the way (EEXIST)", "remove it or choose another path"]
        when Errno::ENOTDIR
          ["a component of the path is not a directory (ENOTDIR)", "remove the file in the way or choose another path"]
        when Errno::EIO
          ["an I/O error occurred (EIO)", "check the disk; delete the file if it keeps failing"]
        else
          ["#{error.class}: #{Trust::Words.shown(error.message)}", "check the file and its directory"]
        end
      end

      def newer_version
        ["was written by a newer loadout (record format newer than #{Format::FORMAT_VERSION})",
         "upgrade loadout, or delete the file (it is a cache; it will be rebuilt)"]
      end

      def foreign
        ["is not a loadout store (no valid record in it)", "delete it or choose another path"]
      end

      def corrupt(records)
        ["#{records} corrupt record#{"s" unless records == 1} skipped (they are never served)",
         "they are dropped at the next compaction; or delete the file to rebuild the cache"]
      end

      def full
        ["has reached the largest size a store can index (#{Format::MAX_LOG >> 30} GiB)",
         "compact it (loadout compact) or delete it"]
      end

      def readonly
        ["is open read-only", "open it without readonly: true to write"]
      end

      def errno_name(error)
        error.class.name.split("::").last
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  # How loadout opens and writes its own files (store, hint, journal segments, self cache, job
  # files): always as bytes, and never leaving a temp file behind.
  #
  # - Binary mode, asked for with binmode: true. File::BINARY is 0 off Windows, so the flag alone
  #   leaves an IO that transcodes: with an app's Encoding.default_internal set (Rails sets UTF-8)
  #   writing a binary String raised Encoding::UndefinedConversionError.
  # - Temp files are removed in an ensure, so any failure (ENOSPC, EIO, an exception, an
  #   interrupt) takes them away; only a crash or SIGKILL leaves one, and the store's compaction
  #   sweeps those (Store::Compaction#remove_stale_temp_files).
  module BinaryFile # :nodoc:
    module_function

    # File.new in binary mode: no encoding conversion on read or write.
    #: (String, Integer, ?Integer) -> File
    def open(path, flags, perm = 0o644)
      File.new(path, flags, perm, binmode: true)
    end

    # A fresh temp name beside +path+ ("PATH.tmp.PID.RANDOM").
    def temp_path(path) #: (String) -> String
      "#{path}.tmp.#{Process.pid}.#{Random.urandom(4).unpack1("H*")}"
    end

    # Writes +data+ to +path+ through a temp file renamed over it: a reader sees the old file or
    # the new one. Raises what the file system raised; the temp file is gone either way.
    #: (String, String) -> void
    def atomic_write(path, data)
      tmp = temp_path(path)
      write_new(tmp, data)
      File.rename(tmp, path)
      tmp = nil
    ensure
      unlink_quietly(tmp) if tmp
    end

    # Creates +path+ (which must not exist) holding +data+; on any failure it is removed again.
    #: (String, String) -> void
    def write_new(path, data)
      created = false
      io = open(path, File::WRONLY | File::CREAT | File::EXCL)
      created = true
      io.write(data)
      io.close
      created = false
    ensure
      if created
        close_quietly(io)
        unlink_quietly(path)
      end
    end

    def close_quietly(io) #: (IO) -> void
      io.close unless io.closed?
    rescue SystemCallError, IOError
      nil
    end

    def unlink_quietly(path) #: (String) -> void
      File.unlink(path)
    rescue SystemCallError
      nil
    end
  end
end

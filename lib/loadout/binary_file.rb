# frozen_string_literal: true

module Loadout
  # What a failure path does with a file loadout was writing: close it and remove it without a
  # second error hiding the first. Files are opened in binary mode (binmode: true: File::BINARY
  # is 0 off Windows, and a text-mode IO transcodes once an app sets Encoding.default_internal)
  # by Trust::DirHandle (cache files) and the Journal; temp files are removed in an ensure, so
  # only a crash or SIGKILL leaves one, and the store's compaction sweeps those
  # (Store::Compaction#remove_stale_temp_files).
  module BinaryFile # :nodoc:
    module_function

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

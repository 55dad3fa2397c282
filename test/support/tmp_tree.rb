# frozen_string_literal: true

require "tmpdir"
require "fileutils"

module Loadout
  module TestSupport
    # Trees written per test into a fresh temporary directory.
    module TmpTree
      # with_files([["lib/a.rb", "A = 1"], ["lib/dir/"]]) { |dir| ... }: a trailing "/" makes a directory.
      def with_files(entries = [])
        Dir.mktmpdir("loadout-test") do |dir|
          write_files(dir, entries)
          yield File.realpath(dir)
        ensure
          # Tests chmod 000 some directories; give them back so cleanup can remove them.
          FileUtils.chmod_R("u+rwx", dir, force: true) if File.exist?(dir)
        end
      end

      def write_files(dir, entries)
        entries.each do |path, body|
          full = File.join(dir, path)
          if path.end_with?("/")
            FileUtils.mkdir_p(full)
          else
            FileUtils.mkdir_p(File.dirname(full))
            File.binwrite(full, body || "")
          end
        end
      end
    end
  end
end

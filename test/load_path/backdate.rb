# frozen_string_literal: true

module Loadout
  module TestSupport
    # Directories written by a test are "racily clean" for a second (see LoadDir::RACY_NS), so a
    # listing taken right away is rechecked on the next boot. Tests about warm boots first move
    # every directory's mtime into the past, as a tree checked out earlier would be.
    module Backdate
      def backdate(root, seconds: 3600)
        time = Time.now - seconds
        Dir.glob("**/", File::FNM_DOTMATCH, base: root).each do |rel|
          next if rel.end_with?("/./", "/../") || rel == "./" || rel == "../"

          File.utime(time, time, File.join(root, rel))
        end
        File.utime(time, time, root)
      end
    end
  end
end

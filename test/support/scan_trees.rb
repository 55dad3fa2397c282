# frozen_string_literal: true

require "fileutils"

module Loadout
  module TestSupport
    # Builds directory trees holding every edge case Loadout::Scan must handle.
    module ScanTrees
      module_function

      # A fixed tree with one of each edge case; returns the root.
      def edge_tree(root)
        mk = ->(rel) { FileUtils.mkdir_p(File.join(root, rel)) }
        touch = ->(rel, body = "") { File.binwrite(File.join(root, rel), body) }
        link = ->(target, rel) { File.symlink(target, File.join(root, rel)) }

        mk["lib/pkg/deep/deeper"]
        touch["lib/top.rb"]
        touch["lib/pkg/a.rb"]
        touch["lib/pkg/native.so"]
        touch["lib/pkg/readme.txt"]
        touch["lib/pkg/deep/deeper/z.rb"]
        mk["lib/empty"]
        mk["lib/dir_named.rb"]                          # a directory, never a file
        touch["lib/dir_named.rb/inside.rb"]
        mk["lib/node_modules/pkg"]                      # ignored by name
        touch["lib/node_modules/pkg/ignored.rb"]
        mk["lib/ignored_abs"]
        touch["lib/ignored_abs/skip.rb"]
        link["../top.rb", "lib/pkg/linked_file.rb"]     # symlink to a file: a file
        link["deep", "lib/pkg/linked_dir"]              # symlink to a dir: walked through the link
        link["..", "lib/pkg/deep/loop"]                 # points at an ancestor: not walked twice
        link["missing.rb", "lib/pkg/broken.rb"]         # broken link with a requirable name
        link["missing_dir", "lib/pkg/broken_dir"]       # broken link, other name: silently skipped
        touch["lib/ünïcødé.rb"]
        mk["lib/日本"]
        touch["lib/日本/語.rb"]
        touch["lib/.hidden.rb"]
        mk["lib/.dotdir"]
        touch["lib/.dotdir/dot.rb"]
        File.binwrite(File.join(root, "lib/bad\xFFname.rb".b), "") # not valid UTF-8
        FileUtils.mkdir_p(File.join(root, "lib/bad\xFEdir".b))
        File.binwrite(File.join(root, "lib/bad\xFEdir/x.rb".b), "")
        mk["lib/locked"]
        touch["lib/locked/secret.rb"]
        File.chmod(0o000, File.join(root, "lib/locked")) # EACCES for a non-root reader
        root
      end

      # A deterministic random tree of +n+ entries mixing files, dirs and links.
      def random_tree(root, seed:, n: 300)
        rng = Random.new(seed)
        dirs = [""]
        n.times do |i|
          parent = dirs.sample(random: rng)
          base = parent.empty? ? root : File.join(root, parent)
          case rng.rand(10)
          when 0..3 then File.write(File.join(base, "f#{i}.rb"), "")
          when 4 then File.write(File.join(base, "f#{i}.so"), "")
          when 5 then File.write(File.join(base, "f#{i}.txt"), "")
          when 6, 7
            rel = parent.empty? ? "d#{i}" : "#{parent}/d#{i}"
            Dir.mkdir(File.join(root, rel))
            dirs << rel
          when 8
            next unless rng.rand < 0.25 # few links: every simple path through them is walked

            target = dirs.sample(random: rng)
            File.symlink(File.join(root, target), File.join(base, "l#{i}"))
          else
            File.symlink("nowhere#{i}.rb", File.join(base, "b#{i}.rb"))
          end
        end
        root
      end
    end
  end
end

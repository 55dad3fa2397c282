# frozen_string_literal: true

module Loadout
  module TestSupport
    # An independent, obviously-correct (and slow) walk with Scan's documented semantics, built
    # on File.stat per entry. Tests compare both backends against it, as sorted sets.
    module ScanReference
      module_function

      def walk(root, extensions: Loadout::Scan::DEFAULT_EXTENSIONS, ignore: Loadout::Scan::DEFAULT_IGNORE)
        files = []
        dirs = []
        errors = []
        visit = lambda do |rel, ancestors|
          path = rel.empty? ? root : File.join(root, rel)
          begin
            st = File.stat(path)
            names = Dir.children(path)
          rescue SystemCallError => e
            errors << [rel, e.class.name.split("::").last.downcase.to_sym] unless rel.empty?
            return
          end
          if ancestors.include?([st.dev, st.ino])
            errors << [rel, :loop]
            return
          end
          dirs << [rel, (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec]
          names.each do |name|
            name = name.dup.force_encoding(Encoding::UTF_8)
            child = rel.empty? ? name : "#{rel}/#{name}"
            unless name.valid_encoding?
              errors << [child.b, :invalid_encoding]
              next
            end
            full = File.join(root, child)
            cst = begin
              File.stat(full)
            rescue SystemCallError => e
              if extensions.any? { |x| name.end_with?(x) }
                errors << [child, e.class.name.split("::").last.downcase.to_sym]
              end
              next
            end
            if cst.directory?
              next if ignore.include?(name) || ignore.include?(full)

              visit.call(child, ancestors + [[st.dev, st.ino]])
            elsif cst.file? && extensions.any? { |x| name.end_with?(x) }
              files << child
            end
          end
        end
        visit.call("", [])
        { files: files.sort, dirs: dirs.sort, errors: errors.sort_by(&:inspect) }
      end

      def normalize(result)
        {
          files: result.files.sort,
          dirs: result.dirs.zip(result.dir_mtimes).sort,
          errors: result.errors.sort_by(&:inspect),
        }
      end
    end
  end
end

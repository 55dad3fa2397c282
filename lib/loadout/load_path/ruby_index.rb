# frozen_string_literal: true

module Loadout
  module LoadPath
    # The Ruby twin of ext/loadout/lp_table.c + lp_native.c + the lookup in require_native.c:
    # same inputs, same answers, with a Hash for the table.
    module RubyIndex # :nodoc:
      DLEXT = ".#{RbConfig::CONFIG["DLEXT"]}"
      SO_EXTS = [".so", ".o", DLEXT].uniq.freeze

      # The names of one directory's listing (twin of Native::LoadPathListing).
      class Listing
        attr_reader :names

        def initialize(files)
          unless files.empty? || files.end_with?("\0")
            raise ArgumentError, "a listing is NUL-terminated non-empty names"
          end

          @names = files.b.split("\0", -1)
          @names.pop
          raise ArgumentError, "a listing is NUL-terminated non-empty names" if @names.any?(&:empty?)
        end

        def size
          @names.size
        end
      end

      # name -> first position holding it (twin of Native::LoadPathTable).
      class Table
        attr_reader :bases, :count, :first_opaque

        def initialize(listings, bases)
          raise ArgumentError, "listings and bases differ in length" unless listings.size == bases.size

          @bases = bases.dup.freeze
          @count = listings.size
          @first_opaque = listings.index(nil) || @count
          @map = {}
          listings.each_with_index do |listing, pos|
            next unless listing

            listing.names.each { |name| @map[name] = pos unless @map.key?(name) }
          end
        end

        def find(name)
          @map[name.b]
        end
      end

      class << self
        # The twin of require_native.c lookup(): [position, name], :miss or :unknown_entry.
        def lookup(table, feature)
          stem, kind = classify(feature)
          if kind == :any
            found = answer(table, "#{stem}.rb")
            return found unless found == :miss

            # x.rb in any item beats x.so in an earlier one; an unlisted item may hold x.rb
            return :unknown_entry if table.first_opaque < table.count
          elsif kind == :rb
            return answer(table, stem)
          end
          answer(table, "#{stem}#{DLEXT}")
        end

        # [stem, :rb | :so | :any] as search_required() decides (see require_native.c classify).
        def classify(feature)
          dot = feature.rindex(".")
          slash = feature.rindex("/")
          return [feature, :any] if dot.nil? || (slash && slash > dot)

          ext = feature[dot..]
          return [feature, :rb] if ext == ".rb"
          return [feature[0, dot], :so] if SO_EXTS.include?(ext)

          [feature, :any]
        end

        # Every directory in +dirs+ still has its recorded mtime (see lp_native.c).
        def dirs_fresh?(base, dirs, mtimes)
          names = Codec.names(dirs)
          times = mtimes.unpack("q*")
          return false unless names.size == times.size

          names.each_with_index.all? do |rel, i|
            st = File.stat(rel.empty? ? base : "#{base}/#{rel}")
            st.directory? && (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec == times[i]
          rescue SystemCallError
            false
          end
        end

        # lp_native.c lp_dir_changed: one stat, of the deepest recorded directory on the way to
        # +dir+ ("" for +base+).
        def dir_changed?(base, dirs, mtimes, dir)
          names = Codec.names(dirs)
          times = mtimes.unpack("q*")
          best = names.each_index.select do |i|
            n = names[i]
            n.empty? || n == dir || dir.start_with?("#{n}/")
          end.max_by { |i| names[i].bytesize }
          return true unless best

          path = names[best].empty? ? base : "#{base}/#{names[best]}"
          st = File.stat(path)
          !st.directory? || (st.mtime.to_i * 1_000_000_000) + st.mtime.nsec != times[best]
        rescue SystemCallError
          true
        end

        # lp_native.c lp_changed_dirs: the LoadDirs of +load_dirs+ that may have gained a file
        # under +dir+ since they were listed (LoadDir#maybe_changed_for?); nil when none did.
        def changed_dirs(load_dirs, dir)
          changed = load_dirs.select { |d| d.maybe_changed_for?(dir) }
          changed.empty? ? nil : changed
        end

        private

        def answer(table, name)
          pos = table.find(name)
          if pos
            pos < table.first_opaque ? [pos, name] : :unknown_entry
          else
            table.first_opaque < table.count ? :unknown_entry : :miss
          end
        end
      end
    end
  end
end

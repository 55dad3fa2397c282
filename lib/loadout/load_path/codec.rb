# frozen_string_literal: true

module Loadout
  module LoadPath
    # The stored form of one directory's listing, under "lp/ent/<expanded item>" (and a copy under
    # "lp/gem/<path under its gem home>" or "lp/app/<path relative to the app root>" that a copy
    # of the bundle or the app elsewhere can start from: see Lister):
    #
    #   "LPL" version(1) | ignore bytes u32 | base bytes u32 | files bytes u32 | dirs bytes u32 |
    #   dir count u32
    #   ignore: DLEXT and the ignored directories the listing was made with, NUL-separated
    #   base:  the directory's realpath when it was listed (what Ruby joins features to)
    #   files: "rel\0rel\0..."  requirable names (.rb and DLEXT), relative to the directory
    #   dirs:  "rel\0rel\0..."  every directory of the tree ("" is the root itself)
    #   mtimes: one int64 (ns, native order) per directory, RACY when listed too close to a change
    #
    # The files block goes to the index as is (Native.lp_listing copies it, no Ruby String per
    # name); dirs and mtimes are only read to check an app directory. Anything that does not
    # decode is a miss, never an error.
    module Codec # :nodoc:
      MAGIC = "LPL\x03".b.freeze
      HEADER = 4 + 20
      PREFIX = "lp/ent/"
      # What a listing depends on besides the directory: the extensions Ruby requires here.
      DLEXT = ".#{RbConfig::CONFIG["DLEXT"]}"

      Decoded = Struct.new(:base, :files, :dirs, :mtimes)

      class << self
        # The key of the listing for a $LOAD_PATH item expanded to +expanded+.
        def key(expanded)
          "#{PREFIX}#{expanded}".force_encoding(Encoding::BINARY) # (a fresh String: one object per dir, not two)
        end

        # The key of the relocatable copy of a listing: +kind+ "gem" (+rel+ under a gem home) or
        # "app" (+rel+ under the app root).
        def moved_key(kind, rel)
          "lp/#{kind}/#{rel}".b
        end

        # The stored bytes of +decoded+ (a listing made elsewhere) with +base+ as its realpath.
        def rebase(decoded, base, ignore)
          tag = stamp(ignore)
          [MAGIC, [tag.bytesize, base.bytesize, decoded.files.bytesize, decoded.dirs.bytesize,
                   decoded.dirs.count("\0")].pack("L<5"), tag, base, decoded.files, decoded.dirs, decoded.mtimes].join.b
        end

        # "a\0b\0" for ["a", "b"]: a files or dirs block as stored.
        def join(list)
          list.empty? ? +"" : "#{list.join("\0")}\0"
        end

        # +files+ and +dirs+: Arrays of relative names; +mtimes+: Integers (ns), parallel to dirs.
        def encode(base, files, dirs, mtimes, ignore)
          tag = stamp(ignore)
          file_blob = join(files)
          dir_blob = join(dirs)
          [MAGIC, [tag.bytesize, base.bytesize, file_blob.bytesize, dir_blob.bytesize, dirs.size].pack("L<5"),
           tag, base, file_blob, dir_blob, mtimes.pack("q*")].join.b
        end

        # Decoded(base, files blob, dirs blob, mtimes blob) or nil. +ignore+ nil: any ignore list
        # (for readers that only look at the directories, like Eviction).
        def decode(raw, ignore)
          return nil unless raw.is_a?(String) && raw.bytesize >= HEADER && raw.start_with?(MAGIC)

          stamp_len, base_len, file_len, dir_len, count = raw.unpack("L<5", offset: 4)
          return nil unless raw.bytesize == HEADER + stamp_len + base_len + file_len + dir_len + (count * 8)
          return nil unless ignore.nil? || stamped?(raw, stamp_len, stamp(ignore))

          at = HEADER + stamp_len
          base = raw.byteslice(at, base_len).freeze # (LoadDir#adopt keeps it as is)
          files = raw.byteslice(at += base_len, file_len)
          dirs = raw.byteslice(at += file_len, dir_len)
          return nil unless base.start_with?("/") && (files.empty? || files.end_with?("\0"))
          return nil unless dirs.count("\0") == count

          Decoded.new(base, files, dirs, raw.byteslice(at + dir_len, count * 8))
        end

        # The relative names of a blob ("a\0b\0" -> ["a", "b"]), UTF-8 like Scan's.
        def names(blob)
          list = blob.split("\0", -1) # -1 keeps "" (the root dir); the last one is after the final NUL
          list.pop
          list.map! { |n| n.force_encoding(Encoding::UTF_8) }
        end

        private

        # Whether the stamp stored at HEADER (+len+ bytes) is +stamp+, compared in place (no copy of
        # it: decoded once per boot for each of hundreds of dirs). The first occurrence of +stamp+
        # from HEADER on is at HEADER exactly when the bytes there are +stamp+.
        def stamped?(raw, len, stamp)
          return false unless len == stamp.bytesize
          # (String#index counts characters: bytes only in a binary String, as the store's are.)
          return raw.byteslice(HEADER, len) == stamp unless raw.encoding == Encoding::BINARY

          raw.index(stamp, HEADER) == HEADER
        end

        # Decoded once per boot for each of hundreds of dirs, always with the same list.
        def stamp(ignore)
          return @stamp if @stamp_for.equal?(ignore)

          @stamp_for = ignore
          @stamp = [DLEXT, *ignore].join("\0").b.freeze
        end
      end
    end
  end
end

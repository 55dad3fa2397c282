# frozen_string_literal: true


module Loadout
  class Store
    # Opening: the file (creating its directory), then the key map from the hint or a scan. With
    # fail_safe, every environment problem becomes one warning and a read-only or empty store.
    module Opener # :nodoc:
      private

      def open_file
        @file = @readonly ? open_readonly : open_writable
        load_index if @file
        @writable = !@readonly && !@file.nil? && @file.writable? && !@foreign && !@newer
        check_contents
      rescue Trust::Refused => e
        refuse(e.report)
      rescue StandardError => e
        raise store_error(e) if !@fail_safe && (e.is_a?(SystemCallError) || e.is_a?(IOError))
        raise unless survivable?(e)

        @file&.close
        @file = nil
        @index = Index.new
        @writable = false
        degrade(*Problems.describe(e, @path))
      end

      def open_readonly
        LogFile.open(@path, false, @shared)
      rescue Errno::ENOENT
        nil # a missing store is an empty one
      end

      def open_writable
        dir = File.dirname(@path)
        Trust.make_dirs(dir, @shared) unless File.directory?(dir)
        LogFile.open(@path, true, @shared)
      rescue Errno::EACCES, Errno::EPERM, Errno::EROFS, Errno::ENOSPC, Errno::EDQUOT => e
        raise store_error(e) unless @fail_safe

        # Serve what is there, read-only; a missing file just means an empty store.
        degrade(*Problems.describe(e, @path))
        open_readonly
      end

      def load_index
        @index, @end = Hint.load(@path, @file, @shared)
        @hint_end = @end || -1
        unless @index
          @index = Index.new
          @end = 0
        end
        size = @file.size
        catch_up(size, false) if size > @end
      end

      def check_contents
        if @newer
          raise StoreVersionError.new(@path, *Problems.newer_version) unless @fail_safe

          degrade(*Problems.newer_version)
        elsif @foreign
          degrade(*Problems.foreign) if @fail_safe
        elsif @index.corrupt_records > 0 && @fail_safe
          warn_once(*Problems.corrupt(@index.corrupt_records))
        end
      end

      # Reads the file from @end to +size+ into the map. Under the append lock (+locked+), bytes
      # after the last valid record are a torn tail (no valid record follows them) and are cut off.
      def catch_up(size, locked)
        from = @end
        buf = @file.pread(size - from, from)
        entries, good_end, bad_records, bad_bytes, newer = Format.parse(buf, from)
        @index.apply_entries(entries)
        @index.add_corrupt(bad_records, bad_bytes)
        if bad_records > 0 && Instrumentation.enabled?
          Instrumentation.emit(:corrupt, @path, cache: :store, reason: :checksum, records: bad_records)
        end
        @newer ||= newer
        @foreign = true if from.zero? && good_end.zero? && !newer && buf.bytesize >= Format::HEADER &&
                           buf.byteslice(0, 2) != Format::MAGIC
        @end = good_end
        @file.truncate(good_end) if locked && good_end < buf.bytesize + from && !@newer && !@foreign
      end

      def store_error(error)
        StoreError.new(@path, *Problems.describe(error, @path))
      end

      # The store (or its hint) fails the trust rule: nothing more is read from it or written to it.
      def refuse(report)
        @file&.close
        @file = nil
        @index = Index.new
        @end = 0
        @writable = false
        @refused = true
        @pending&.clear
        raise StoreError.new(@path, Trust::Words.problem(report), Trust::Words.fix(report, @shared)) unless @fail_safe

        warn_once(Trust::Words.problem(report),
                  "#{Trust::Words.fix(report, @shared)} (whoever can write it can make this program run their " \
                  "code, so loadout neither reads nor writes it)")
      end

      # fail_safe: stop writing, say so once.
      def degrade(problem, fix)
        @writable = false
        @pending&.clear
        warn_once(problem, "#{fix} (loadout continues without writing to it)")
      end

      def warn_once(problem, fix)
        return if @warned

        @warned = true
        warn "loadout: cache store #{@path}: #{problem}; #{fix}"
      end
    end
  end
end

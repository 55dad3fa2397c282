# frozen_string_literal: true

require "loadout/store/format"

module Loadout
  class Store
    # Appending, shared by every writer process: take flock(LOCK_EX) on the file, make sure it is
    # still the file at +path+ (compaction may have renamed a new one over it), read what other
    # processes appended since our last look, cut a torn tail, then append with one write(2).
    # Readers never take the lock.
    module Writer # :nodoc:
      AUTO_COMPACT_MIN_GARBAGE = 1 << 20 # and garbage above half the file

      private

      # Yields the locked LogFile, with the map caught up to its end.
      def with_write_lock
        check_fork
        file = @file
        loop do
          file.lock
          break unless file.replaced?

          file.unlock
          reopen
          file = @file
        end
        begin
          size = file.size
          reload if size < @end # cut under us (only a torn tail is ever cut, so this is external)
          catch_up(size, true) if size > @end
          raise StoreError.new(@path, *(@newer ? Problems.newer_version : Problems.foreign)) if @newer || @foreign

          yield file
        ensure
          file.unlock
        end
      end

      # Appends framed records (+buf+; +entries+ = [flags, key, offset in buf, length, ...]).
      # The file header record goes in front of the first write to an empty file.
      def write_records(file, buf, entries)
        at = @end
        shift = 0
        if at.zero?
          head = Format.frame_into(String.new(encoding: Encoding::BINARY), Format::META, Format::FILE_HEADER_KEY, "")
          shift = head.bytesize
          buf = head << buf
        end
        file.append(buf, at)
        i = 0
        while i < entries.length
          @index.apply(entries[i], entries[i + 1], at + shift + entries[i + 2], entries[i + 3])
          i += 4
        end
        @end = at + buf.bytesize
      end

      def maybe_auto_compact(file)
        garbage = @index.garbage_bytes + @index.corrupt_bytes
        compact_locked(file) if garbage > AUTO_COMPACT_MIN_GARBAGE && garbage * 2 > @end
      end

      # Runs a write; I/O errors raise StoreError, or with fail_safe turn the store read-only.
      def guarded_write
        yield
      rescue Trust::Refused => e # a hint or store file swapped for one that fails the rule
        refuse(e.report)
        nil
      rescue StoreError => e
        raise unless @fail_safe

        degrade(e.problem, e.fix)
        nil
      rescue SystemCallError, IOError => e
        raise store_error(e) unless @fail_safe

        degrade(*Problems.describe(e, @path))
        nil
      end

      # Writes the deferred queue as one locked append (a few, if it passes LogFile::MAX_WRITE).
      def write_pending
        forget_parent_queue
        return if @pending.nil? || @pending.empty?

        pending = @pending
        @pending = {}
        guarded_write do
          with_write_lock do |file|
            buf = String.new(encoding: Encoding::BINARY)
            entries = []
            pending.each do |key, value|
              if value.equal?(DELETED)
                next unless @index.key?(key)

                flags = Format::DELETE
                value = ""
              else
                flags = Format::PUT
              end
              start = buf.bytesize
              Format.frame_into(buf, flags, key, value)
              entries.push(flags, key, start, buf.bytesize - start)
              next if buf.bytesize < LogFile::MAX_WRITE

              write_records(file, buf, entries)
              buf = String.new(encoding: Encoding::BINARY)
              entries = []
            end
            write_records(file, buf, entries) unless entries.empty?
            maybe_auto_compact(file)
          end
        end
      end

      # After fork the child needs its own open file description: flock belongs to the
      # description, so a shared one would not exclude the parent. What the parent queued is the
      # parent's to write.
      def check_fork
        forget_parent_queue
        return unless @reopen_needed

        @reopen_needed = false
        reopen
      end

      # In a forked child, the queue inherited from the parent is the parent's to write.
      def forget_parent_queue
        return if @pid == Process.pid

        @pid = Process.pid
        @pending&.clear
        @reopen_needed = true
      end

      # A new descriptor for +path+; if it is another file (compacted), a new map too.
      def reopen
        old = @file
        begin
          @file = LogFile.open(@path, true, @shared)
        rescue Trust::Refused => e
          raise StoreError.new(@path, Trust::Words.problem(e.report), Trust::Words.fix(e.report, @shared))
        end
        old&.close
        reload if old.nil? || old.ino != @file.ino || old.dev != @file.dev
      end

      def reload
        @index = nil
        @end = 0
        load_index
      end
    end
  end
end

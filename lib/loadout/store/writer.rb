# frozen_string_literal: true

require_relative "format"

module Loadout
  class Store
    # Appending, shared by every writer process: take flock(LOCK_EX) on the file, make sure it is
    # still the file at +path+ (compaction may have renamed a new one over it), read what other
    # processes appended since our last look, cut a torn tail, then append with one write(2).
    # Readers never take the lock.
    #
    # A mixin, not an object: it replaces the file, the key map and the log end (reopen, reload,
    # compaction, refusal) that Store#get reads straight from the store's ivars; an object would
    # cost a call per get to reach them, or a copy back into the store after every put.
    module Writer # :nodoc:
      private

      def close_locked
        return if @closed

        begin
          write_pending if @writable && @pid == Process.pid
          write_hint if @writable && @file && @end != @hint_end && @pid == Process.pid && !@refused
        rescue StandardError => e
          raise unless @policy.survivable?(e)

          degrade(*Problems.describe(e, @path))
        ensure
          @closed = true
          @file&.close
          Registry.remove(self)
        end
      end

      def oversized(key, value)
        Format.check_lengths(key.bytesize, value.bytesize) unless @fail_safe
        Instrumentation.emit(:skipped, @path, cache: :store, reason: :too_large) if Instrumentation.enabled?
        delete(key) if key.bytesize <= Format::MAX_KEY
        nil
      end

      def write_hint
        @hint_end = @end if Hint.write(@path, @file, @index, @end, @shared)
      end

      def writing?
        return true if @writable && !@closed

        @policy.not_writable(@closed, @foreign)
      end

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
          catch_up(size) if size > @end
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
          head = Format.file_header(Format::FILE_HEADER_SIZE + buf.bytesize)
          shift = head.bytesize
          buf = head << buf
        end
        raise StoreError.new(@path, *Problems.full) if at + buf.bytesize > @max_log

        file.append(buf, at)
        i = 0
        while i < entries.length
          @index.apply(entries[i], entries[i + 1], at + shift + entries[i + 2], entries[i + 3])
          i += 4
        end
        @end = at + buf.bytesize
      end

      # Reads what other processes appended, up to +size+, into the map (under the append lock).
      # Bytes after the last valid record are a torn tail (no valid record follows them): cut off.
      def catch_up(size)
        @grown_by_others = true # (see Enumeration#grown_by_others?)
        @end, newer, foreign, read_end = @opener.catch_up(@file, @index, @end, size)
        @newer ||= newer
        @foreign = true if foreign
        @file.truncate(@end) if @end < read_end && !@newer && !@foreign
      end

      # Compacts the locked +file+ (Compaction#run), adopts the new file and writes its hint.
      # +judged_below+: only records before this offset are offered to +evict+ (nil: all).
      def compact_locked(file, evict, judged_below = nil)
        adopt(@compaction.run(file, @index, evict, judged_below))
        write_hint
      end

      # The automatic compaction, when due. Records appended since this process last read the
      # log whole (#adopt) were written by boots running now, from files they just compiled or
      # parsed: live by construction, so the evictor judges only the older ones. A cold boot's
      # sweep at exit (its log grew from nothing) then asks about no record at all.
      def sweep_if_due(file)
        compact_locked(file, @compaction.evictor, @settled_end) if @compaction.due?(file, @index, @end)
      end

      # Runs a write; I/O errors raise StoreError, or with fail_safe (any error but a ConfigError)
      # turn the store read-only.
      def guarded_write
        yield
      rescue Trust::Refused => e # a hint or store file swapped for one that fails the rule
        refuse(e.report)
        nil
      rescue StandardError => e
        degrade(*@policy.survive(e))
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
              delete = value.equal?(DELETED)
              next if delete && !@index.key?(key)

              flags = delete ? Format::DELETE : Format::PUT
              start = buf.bytesize
              Format.frame_into(buf, flags, key, delete ? "" : value)
              entries.push(flags, key, start, buf.bytesize - start)
              next if buf.bytesize < LogFile::MAX_WRITE

              write_records(file, buf, entries)
              buf = String.new(encoding: Encoding::BINARY)
              entries = []
            end
            write_records(file, buf, entries) unless entries.empty?
            sweep_if_due(file)
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
        return if @pid == @process.pid

        @pid = @process.pid
        @pending&.clear
        @reopen_needed = true
      end

      # A new descriptor for +path+; if it is another file (compacted), a new map too.
      def reopen
        old = @file
        @file = @opener.reopen
        old&.close
        reload if old.nil? || old.ino != @file.ino || old.dev != @file.dev
      end

      # The map of @file read again (Opener#load): another process cut or replaced the file.
      def reload
        adopt(@opener.load(@file))
      end

      # Takes what an Opener or a Compaction returned (+newer+ and +foreign+, once seen, stay).
      def adopt(state)
        @file = state.file
        @index = state.index
        @end = state.end
        @settled_end = state.end # see #sweep_if_due
        @hint_end = state.hint_end
        @newer ||= state.newer
        @foreign ||= state.foreign
      end

      # The file or its hint fails the trust rule: nothing more is read from it or written to it.
      def refuse(report)
        @file&.close
        @file = nil
        @index = Index.new
        @end = 0
        @writable = false
        @refused = true
        @pending&.clear
        @policy.refused(report)
      end

      # fail_safe: stop writing, say so once.
      def degrade(problem, fix)
        @writable = false
        @pending&.clear
        @policy.degraded(problem, fix)
      end
    end
  end
end

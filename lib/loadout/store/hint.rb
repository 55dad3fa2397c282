# frozen_string_literal: true

require_relative "../binary_file"

module Loadout
  class Store
    # The hint file (PATH.hint): the key map of a log prefix, so open reads one small file instead
    # of scanning the log. It names the log it describes (dev, inode, covered length and the CRC of
    # the last 64 covered bytes) and ends with a CRC of itself; anything that does not match is
    # ignored and the log is scanned. Written to a temp file and renamed into place.
    #
    # The device and inode are recorded but not required: a cache dir restored by copy (a CI
    # cache, a Docker layer) has new inodes and the same bytes, and its hint must still serve.
    # What identifies the log is its content: the covered length and the CRC of the bytes that end
    # it (the last record's tail and CRC). A hint that still matched another log would only cost
    # misses: every read checks the record's CRC and key.
    #
    # Not fsynced: a hint that a crash leaves torn, empty or stale fails those checks and costs
    # the next open one scan of the log, never a wrong answer; an fsync would cost every boot
    # that wrote anything (a first boot, a CI boot) a disk flush at exit.
    module Hint # :nodoc:
      TAIL = 64

      module_function

      def path_for(path)
        "#{path}.hint"
      end

      # [Index, covered_end] from a hint that matches +file+, or nil.
      # A hint that fails the trust rule raises Trust::Refused: the store refuses the whole cache.
      def load(path, file, shared)
        data = Trust.read(path_for(path), shared) or return nil
        fields, table = Format.hint_table(data)
        return nil unless fields

        _dev, _ino, covered, tail_crc, *counters = fields
        return nil unless covered <= file.size && tail_crc(file, covered) == tail_crc

        [Index.new({}, counters, base: table), covered]
      rescue SystemCallError, IOError
        nil
      end

      # Writes the hint for +index+, which covers file bytes [0, covered). Returns true on success;
      # a failure only costs the next open a scan. (The temp file is created exclusively under a
      # random name and removed whatever fails: see Trust.write_atomically.)
      def write(path, file, index, covered, shared)
        Trust.write_atomically(path_for(path), build(file, index, covered), shared)
      rescue SystemCallError, IOError
        false
      end

      def build(file, index, covered)
        entries, count = native_entries(index) || ruby_entries(index)
        buf = String.new(Format::HINT_MAGIC, capacity: Format::HINT_HEADER + entries.bytesize + 4)
        buf << [file.dev, file.ino, covered, tail_crc(file, covered), count, *index.counters].pack(Format::HINT_FIELDS)
        buf << entries
        buf << [Format.crc32c(buf)].pack("V")
      end

      # [entries, count] straight from the native hint table and the overlay (no full map built).
      def native_entries(index)
        return nil unless BACKEND == :native

        base, overlay = index.layers
        return nil unless base.nil? || base.is_a?(Native::HintTable)

        Native.store_hint_entries(base&.bytes, overlay, Index::GONE)
      end

      def ruby_entries(index)
        map = index.map
        entries = String.new(capacity: map.size * 48)
        map.each do |key, packed|
          entries << [packed & Format::OFFSET_MASK, packed >> Format::OFFSET_BITS, key.bytesize].pack("Q<VV") << key
        end
        [entries, map.size]
      end

      def tail_crc(file, covered)
        len = covered < TAIL ? covered : TAIL
        Format.crc32c(file.pread(len, covered - len))
      end
    end
  end
end

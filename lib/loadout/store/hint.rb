# frozen_string_literal: true

require_relative "../trust"
require_relative "format"
require_relative "key_map"

module Loadout
  class Store
    # The hint file ("<store>.hint"): the key map of a log prefix, so open reads one small file
    # instead of scanning the log. Ignored (the log is scanned) unless it names the very log it
    # is read for, by what another log cannot share:
    # - the log id: 16 random bytes in the log's file header, new for every file (a first write
    #   to an empty file, each compaction). A hint left for a log that was compacted away (its
    #   writer killed between the rename and the hint write; or a process that still had the old
    #   file open writing its hint last) names the old id;
    # - the exact covered length: the record the hint says ends the covered prefix is read back
    #   from the log (header CRC, and the same header and body CRCs as when the hint was written)
    #   and must end exactly there;
    # - the same device and inode, or, for a copy of the cache dir (a CI cache restore, a Docker
    #   layer: new inodes, same bytes), a log that still ends where the hint does.
    # A hint is written only when the log confirms that record, and ends with a CRC of itself.
    #
    # Not fsynced: a hint that a crash leaves torn, empty or stale fails those checks and costs
    # the next open one scan of the log, never a wrong answer; an fsync would cost every boot
    # that wrote anything (a first boot, a CI boot) a disk flush at exit. Written to a temp file
    # in the store's directory and renamed into place (Trust::DirHandle#write_atomically).
    class Hint # :nodoc:
      def initialize(dir, store_name)
        @dir = dir # Trust::DirHandle of the store's directory
        @name = "#{store_name}.hint"
      end

      attr_reader :name

      # [KeyMap, covered end, offset of the last covered record, swept end] from a hint that names
      # +file+, or nil. The swept end (0: unknown) is where the log needed no sweep when the hint
      # was written (Compaction#due), in whole KiB. A hint that fails the trust rule raises
      # Trust::Refused: the store refuses the whole cache.
      #: (LogFile) -> [KeyMap, Integer, Integer, Integer]?
      def load(file)
        data = @dir.read(@name) or return nil
        fields, table = Format.hint_table(data)
        return nil unless fields

        id, dev, ino, covered, last_off, last_hcrc, last_bcrc, *counters, swept_kib = fields
        size = file.size
        return nil unless covered <= size && id == file.id
        return nil unless (dev == file.dev && ino == file.ino) || covered == size
        return nil unless ends_at?(file, last_off, covered, last_hcrc, last_bcrc)

        swept = swept_kib << 10
        [KeyMap.new({}, counters, base: table), covered, last_off, swept <= covered ? swept : 0]
      rescue SystemCallError, IOError
        nil
      end

      # Writes the hint for +map+, which covers file bytes [0, covered), the last covered record
      # starting at +last_off+, the log needing no sweep up to +swept+ (0: unknown). Returns true
      # when it did; a failure only costs the next open a scan. Nothing is written for a file
      # without a log id (an older loadout's) or when the log does not confirm the record.
      #: (LogFile, KeyMap, Integer, Integer, ?Integer) -> bool
      def write(file, map, covered, last_off, swept = 0)
        id = file.id or return false
        head = last_off >= 0 && Format.record_header(file.pread(Format::HEADER, last_off))
        return false unless head && last_off + head[0] == covered

        swept_kib = [swept, covered].min >> 10
        @dir.write_atomically(@name, build(file, id, map, covered, last_off, head[1], head[2], swept_kib))
      rescue SystemCallError, IOError
        false
      end

      private

      def ends_at?(file, last_off, covered, hcrc, bcrc)
        head = Format.record_header(file.pread(Format::HEADER, last_off))
        !head.nil? && last_off + head[0] == covered && head[1] == hcrc && head[2] == bcrc
      end

      def build(file, id, map, covered, last_off, hcrc, bcrc, swept_kib)
        entries, count = native_entries(map) || ruby_entries(map)
        buf = String.new(Format::HINT_MAGIC, capacity: Format::HINT_HEADER + entries.bytesize + 4)
        fields = [id, file.dev, file.ino, covered, last_off, hcrc, bcrc, count, swept_kib, *map.counters]
        buf << fields.pack(Format::HINT_FIELDS)
        buf << entries
        buf << [Format.crc32c(buf)].pack("V")
      end

      # [entries, count] straight from the native hint table and the overlay (no full map built).
      def native_entries(map)
        return nil unless BACKEND == :native

        base, overlay = map.layers
        return nil unless base.nil? || base.is_a?(Native::HintTable)

        Native.store_hint_entries(base&.bytes, overlay, KeyMap::GONE)
      end

      def ruby_entries(map)
        all = map.map
        entries = String.new(capacity: all.size * 48)
        all.each do |key, packed|
          entries << [packed & Format::OFFSET_MASK, packed >> Format::OFFSET_BITS, key.bytesize].pack("Q<VV") << key
        end
        [entries, all.size]
      end
    end
  end
end

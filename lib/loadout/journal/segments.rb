# frozen_string_literal: true

module Loadout
  class Journal
    # The journal directory: LOCK (held with flock for the journal's lifetime) and numbered
    # segment files in the store's record format. Entries are PUT records keyed by the id (8 bytes,
    # big-endian); acks are DELETE records; META "ids" records say which ids may have been handed out.
    module Segments # :nodoc:
      PATTERN = /\Asegment-(\d{10})\.log\z/.freeze
      IDS_KEY = "ids".b.freeze

      module_function

      def path(dir, number)
        File.join(dir, format("segment-%010d.log", number))
      end

      # Segment numbers present in +dir+, ascending.
      def numbers(dir)
        Dir.children(dir).filter_map { |name| PATTERN.match(name)&.[](1)&.to_i }.sort
      end

      # Parses one segment: yields (flags, id, payload) per valid record and returns
      # [good_end, size, newer_version, corrupt_records].
      def read(path)
        buf = Trust.read(path, false) || raise(Errno::ENOENT, path) # (checked: see Directory)
        entries, good_end, bad_records, _bad_bytes, newer = Store::Format.parse(buf, 0)
        i = 0
        while i < entries.length
          flags = entries[i]
          key = entries[i + 1]
          off = entries[i + 2]
          len = entries[i + 3]
          if flags == Store::Format::META
            yield flags, key == IDS_KEY ? buf.byteslice(off + len - 8, 8).unpack1("Q>") : nil, nil if key == IDS_KEY
          elsif key.bytesize == 8
            payload = flags == Store::Format::PUT ? buf.byteslice(off + 28, len - 28) : nil
            yield flags, key.unpack1("Q>"), payload
          end
          i += 4
        end
        [good_end, buf.bytesize, newer, bad_records]
      end

      # The META record that opens a segment and records the id high-water mark.
      def ids_record(buf, reserved)
        Store::Format.frame_into(buf, Store::Format::META, IDS_KEY, [reserved].pack("Q>"))
      end
    end
  end
end

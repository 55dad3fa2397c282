# frozen_string_literal: true

module Loadout
  module LoadPath
    # "lp/boot": the app's $LOAD_PATH as the last boot that wrote anything saw it (at install,
    # plus the items it added later), its stable roots, its lockfile and digest, and the Ruby
    # files it loaded before install, so `loadout check` and `loadout precompile` (other
    # processes) work for the app's $LOAD_PATH, not their own. A Marshal dump of plain data,
    # checked field by field on read: anything unusable is no record, never an error.
    module BootRecord # :nodoc:
      FORMAT = 5
      KEY = "lp/boot"
      KEEP_LATER = 256 # items added after boot kept in the record
      KEEP_BEFORE = 4096 # files loaded before install kept in the record

      class << self
        # How the record names a $LOAD_PATH item that is not a String.
        def item_of(item)
          item.is_a?(String) ? item : "#<#{item.class}>"
        end

        # Stores +record+ unless it is already there: a boot that saw the same $LOAD_PATH as the
        # recorded one appends nothing.
        def save(store, record)
          raw = Marshal.dump([FORMAT, record])
          store.put(KEY, raw) unless store.get(KEY) == raw
        end

        # The record as a Hash with :load_path, :stable_roots, :later, :lock and :before; nil if
        # absent or unusable.
        def load(store)
          raw = store.get(KEY) or return nil
          format_v, record = Marshal.load(raw) # rubocop:disable Security/MarshalLoad
          return nil unless format_v == FORMAT && record.is_a?(Hash)
          return nil unless %i[load_path stable_roots later before].all? { |k| strings?(record[k]) }

          lock = record[:lock]
          return nil unless lock.nil? || (lock.is_a?(Array) && lock.size == 2 && lock.all?(String))

          record
        rescue StandardError, TypeError, ArgumentError
          nil
        end

        # A cheap, process-independent digest of +bytes+ (String#hash is seeded per process).
        def digest(bytes)
          weighted = 0
          i = 0
          step = 4096
          while i < bytes.bytesize
            weighted = ((weighted * 31) + bytes.byteslice(i, step).sum(32)) & 0xffff_ffff_ffff
            i += step
          end
          format("%x.%x.%x", bytes.bytesize, bytes.sum(32), weighted)
        end

        private

        def strings?(list)
          list.is_a?(Array) && list.all?(String)
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../store/format"

module Loadout
  class Journal
    # Ruby twin of Loadout::Native::JournalBuffer (ext/loadout/store_native.c): the in-process
    # buffer and the id counter. The native one relies on each call holding the GVL; this one
    # uses a Mutex for the same atomicity.
    class RubyBuffer # :nodoc:
      def initialize(next_id, reserved, limit)
        @next_id = next_id
        @reserved = reserved
        @limit = limit
        @buf = String.new(capacity: limit + (limit / 2), encoding: Encoding::BINARY)
        @lock = Mutex.new
        @open = true
      end

      attr_reader :next_id
      attr_writer :reserved

      # The id given to +payload+ (-id when the buffer is now full), or nil, with nothing framed,
      # when that id is not reserved yet or the buffer was disabled.
      def append(payload)
        raise TypeError, "no implicit conversion of #{payload.class} into String" unless payload.is_a?(String)

        @lock.synchronize do
          return nil if !@open || @next_id > @reserved

          id = @next_id
          Store::Format.frame_id_into(@buf, Store::Format::PUT, id, payload)
          @next_id = id + 1
          @buf.bytesize >= @limit ? -id : id
        end
      end

      def disable
        @open = false
        nil
      end

      def frame(flags, key, value)
        @lock.synchronize { Store::Format.frame_into(@buf, flags, key, value) }
        self
      end

      def frame_id(flags, id, value)
        @lock.synchronize { Store::Format.frame_id_into(@buf, flags, id, value) }
        self
      end

      def full?
        @buf.bytesize >= @limit
      end

      def empty?
        @buf.empty?
      end

      def take
        @lock.synchronize do
          full = @buf
          @buf = String.new(capacity: @limit + (@limit / 2), encoding: Encoding::BINARY)
          full
        end
      end
    end

    Buffer = BACKEND == :native ? Native::JournalBuffer : RubyBuffer
    private_constant :RubyBuffer, :Buffer
  end
end

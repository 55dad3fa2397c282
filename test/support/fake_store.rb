# frozen_string_literal: true

module Loadout
  module TestSupport
    # The subset of Loadout::Store the load path index codes against, backed by a Hash; with a
    # path it is also persisted (Marshal, whole file) so a child process can reopen it.
    class FakeStore
      def self.open(path = nil, writable: true)
        new(path, writable)
      end

      attr_reader :puts_count

      def initialize(path, writable)
        @path = path
        @writable = writable
        @data = path && File.exist?(path) ? Marshal.load(File.binread(path)) : {} # rubocop:disable Security/MarshalLoad
        @puts_count = 0
      end

      def get(key)
        @data[key]
      end

      def put(key, value)
        raise IOError, "read-only fake store" unless @writable

        @puts_count += 1
        @data[key.b.freeze] = value.b.freeze
        flush
      end

      def delete(key)
        @data.delete(key)
        flush
      end

      def key?(key)
        @data.key?(key)
      end

      def writable?
        @writable
      end

      def keys
        @data.keys
      end

      # Test helper: overwrite a stored value in place (corruption tests).
      def corrupt!(key, value)
        @data[key] = value.b
        flush
      end

      private

      def flush
        File.binwrite(@path, Marshal.dump(@data)) if @path
      end
    end
  end
end

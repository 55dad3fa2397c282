# frozen_string_literal: true

module Loadout
  module TestSupport
    # A stand-in for Loadout::Store with the subset the compile cache uses (open, get, put,
    # delete, key?, writable?, flush, close), persisted as one Marshal file so subprocess boots
    # share it. Used until lib/loadout/store.rb exists, and by unit tests that count writes.
    class CompileCacheStore
      def self.open(path, readonly: false, fail_safe: true, defer_writes: true)
        new(path, readonly)
      end

      attr_reader :path, :puts

      def initialize(path, readonly)
        @path = path
        @readonly = readonly
        @data = read
        @pending = {}
        @puts = 0
      end

      # A new String the caller owns, as Loadout::Store#get returns.
      def get(key)
        (@pending.key?(key) ? @pending[key] : @data[key])&.dup
      end

      def key?(key)
        !get(key).nil?
      end

      def put(key, value)
        raise IOError, "store opened readonly" if @readonly

        @puts += 1
        @pending[key] = value.b.freeze
      end

      def delete(key)
        raise IOError, "store opened readonly" if @readonly

        @pending[key] = nil
      end

      def writable?
        !@readonly
      end

      def keys
        @data.merge(@pending).reject { |_, v| v.nil? }.keys
      end

      # Merges the pending writes into what is on disk now (another process may have written).
      def flush
        return if @pending.empty? || @path.nil?

        data = read.merge(@pending).reject { |_, v| v.nil? }
        tmp = "#{@path}.#{Process.pid}.tmp"
        File.binwrite(tmp, Marshal.dump(data))
        File.rename(tmp, @path)
        @data = data
        @pending = {}
      end

      def close
        flush
      end

      private

      def read
        return {} unless @path && File.exist?(@path)

        Marshal.load(File.binread(@path)) # rubocop:disable Security/MarshalLoad -- test files only
      rescue ArgumentError, TypeError
        {}
      end
    end
  end
end

# frozen_string_literal: true

require_relative "entry"
# Fidelity is autoloaded: only storing a value needs it, and a warm boot stores none.

module Loadout
  module CompileCache
    # Turns parsed YAML/JSON values into bytes and back. MessagePack (a Symbol extension type,
    # nothing else) when the msgpack gem is loadable and the value round-trips exactly, else
    # Marshal when that round-trips exactly, else nothing (the value is not cached). "Exactly"
    # is Fidelity's judgement, made once when the value is stored, on a real round trip.
    #
    # No codec may expand shared structure. MessagePack has no references: a part reached twice
    # is written twice, so a YAML file of k levels of ten aliases becomes 10^k copies (a 1 KB file
    # that never finished storing). So a value not known to be a tree (JSON's results, plain YAML)
    # is first walked once, visiting each object once, and one that reaches an Array, a Hash or
    # an unfrozen String twice goes to Marshal, which writes a shared object once and links to
    # it. Every walk here (Fidelity's, the freeze below) visits each object once too.
    module Serializer # :nodoc:
      SYMBOL_TYPE = 0

      # A sound entry in a codec this process cannot load (msgpack outside the bundle): a miss
      # with its own reason, not damage.
      class CodecUnavailable < IOError; end

      @msgpack = nil # the MessagePackCodec, built on first use; false when msgpack cannot be loaded

      class << self
        # [codec, bytes], or why +value+ cannot be stored: :unfaithful (no codec reproduces it
        # exactly) or :too_large (its bytes pass +limit+; nothing more is tried then). +plain+:
        # the caller knows the value is a plain tree (no aliases, tags or custom objects), so one
        # MessagePack can pack is taken without the round-trip check. +tree+: no part of it is
        # reached twice (no sharing walk needed).
        #: (untyped, bool, ?plain: bool, ?tree: bool, ?limit: Integer?) -> ([Integer, String] | Symbol)
        def dump(value, freeze, plain: false, tree: false, limit: nil)
          # (msgpack is loaded only for a value it may take: loading it costs more than most parses.)
          if (plain || tree || !shared?(value)) && (factory = msgpack)
            bytes = attempt { factory.dump(value) }
            return :too_large if bytes && limit && bytes.bytesize > limit
            return [Entry::MSGPACK, bytes] if bytes && (plain || faithful?(value, Entry::MSGPACK, bytes, freeze))
          end
          bytes = attempt { Marshal.dump(value) }
          return :too_large if bytes && limit && bytes.bytesize > limit
          return [Entry::MARSHAL, bytes] if bytes && faithful?(value, Entry::MARSHAL, bytes, freeze)

          :unfaithful
        end

        #: (Integer, String, bool) -> untyped
        def load(codec, bytes, freeze)
          case codec
          when Entry::MSGPACK
            # The extension reads what the gem wrote (Native.msgpack_load): a warm boot loads no gem.
            return Native.msgpack_load(bytes, freeze) if BACKEND == :native

            (msgpack or raise CodecUnavailable, "msgpack is not available").load(bytes, freeze: freeze)
          when Entry::MARSHAL
            # rubocop:disable Security/MarshalLoad -- our own bytes, CRC-checked as read
            freeze ? Marshal.load(bytes, freeze: true).tap { |v| deep_freeze(v) } : Marshal.load(bytes)
            # rubocop:enable Security/MarshalLoad
          else raise IOError, "unknown codec #{codec}"
          end
        end

        private

        # Marshal's freeze leaves objects with their own marshal_load (Date) unfrozen; Psych
        # freezes every node. Each object once, however often it is reached.
        def deep_freeze(value)
          seen = {}.compare_by_identity
          stack = [value]
          until stack.empty?
            v = stack.pop
            case v
            when Array, Hash, Range
              next if seen.key?(v)

              seen[v] = true
              if v.is_a?(Array)
                stack.concat(v)
              elsif v.is_a?(Hash)
                v.each { |k, x| stack << k << x }
              else
                stack << v.begin << v.end
              end
            end
            v.freeze
          end
          nil
        end

        # Whether an Array, a Hash or an unfrozen String of +value+ is reached twice (frozen
        # Strings may be shared: Psych and MessagePack both deduplicate them under freeze).
        # Stops at the first; each object is looked into once.
        def shared?(value)
          seen = {}.compare_by_identity
          stack = [value]
          until stack.empty?
            v = stack.pop
            case v
            when Array, Hash, String
              next if v.is_a?(String) && v.frozen?
              return true if seen.key?(v)

              seen[v] = true
              if v.is_a?(Array)
                stack.concat(v)
              elsif v.is_a?(Hash)
                v.each { |k, x| stack << k << x }
              end
            end
          end
          false
        end

        def faithful?(value, codec, bytes, freeze)
          Fidelity.same?(value, load(codec, bytes, freeze))
        rescue StandardError
          false
        end

        def attempt
          yield
        rescue StandardError
          nil
        end

        # A Symbol goes into MessagePack as its name's bytes, which come back as a binary String:
        # only UTF-8 (and ASCII) names are packed, and read back as UTF-8 (YAML and JSON names are
        # UTF-8). Any other Symbol makes the value go to Marshal, which keeps every encoding.
        def symbol_name(sym)
          name = sym.to_s
          raise EncodingError, "not a UTF-8 Symbol" unless name.encoding == Encoding::UTF_8 || name.ascii_only?

          name
        end

        def symbol(bytes)
          (+bytes).force_encoding(Encoding::UTF_8).to_sym
        end

        # The msgpack factory, built once; false when the gem cannot be loaded.
        def msgpack
          return @msgpack unless @msgpack.nil?

          @msgpack = begin
            require "msgpack"
            factory = MessagePack::Factory.new
            factory.register_type(SYMBOL_TYPE, Symbol, packer: method(:symbol_name), unpacker: method(:symbol))
            MessagePackCodec.new(factory)
          rescue LoadError, StandardError
            false
          end
        end
      end

      # Packs with one shared factory; unpacks with a per-call unpacker (frozen or not).
      class MessagePackCodec # :nodoc:
        def initialize(factory)
          @factory = factory
        end

        def dump(value)
          @factory.dump(value)
        end

        def load(bytes, freeze:)
          @factory.load(bytes, freeze: freeze)
        end
      end
      private_constant :MessagePackCodec
    end
  end
end

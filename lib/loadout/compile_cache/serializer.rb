# frozen_string_literal: true

require_relative "entry"
# Fidelity is autoloaded: only storing a value needs it, and a warm boot stores none.

module Loadout
  module CompileCache
    # Turns parsed YAML/JSON values into bytes and back. MessagePack (a Symbol extension type,
    # nothing else) when the msgpack gem is loadable and the value round-trips exactly, else
    # Marshal when that round-trips exactly, else nothing (the value is not cached). "Exactly"
    # is Fidelity's judgement, made once when the value is stored, on a real round trip.
    module Serializer # :nodoc:
      SYMBOL_TYPE = 0

      # A sound entry in a codec this process cannot load (msgpack outside the bundle): a miss
      # with its own reason, not damage.
      class CodecUnavailable < IOError; end

      class << self
        # [codec, bytes] or nil when no codec reproduces +value+ exactly. With trust_msgpack
        # (the caller knows the value is a plain tree: no aliases, tags or custom objects) a value
        # MessagePack can pack is taken without the round-trip check.
        #: (untyped, bool, ?trust_msgpack: bool) -> [Integer, String]?
        def dump(value, freeze, trust_msgpack: false)
          if (factory = msgpack)
            bytes = attempt { factory.dump(value) }
            return [Entry::MSGPACK, bytes] if bytes && (trust_msgpack || faithful?(value, Entry::MSGPACK, bytes, freeze))
          end
          bytes = attempt { Marshal.dump(value) }
          return [Entry::MARSHAL, bytes] if bytes && faithful?(value, Entry::MARSHAL, bytes, freeze)

          nil
        end

        #: (Integer, String, bool) -> untyped
        def load(codec, bytes, freeze)
          case codec
          when Entry::MSGPACK
            (msgpack or raise CodecUnavailable, "msgpack is not available").load(bytes, freeze: freeze)
          when Entry::MARSHAL
            # rubocop:disable Security/MarshalLoad -- our own, digest-checked bytes
            freeze ? Marshal.load(bytes, freeze: true).tap { |v| deep_freeze(v) } : Marshal.load(bytes)
            # rubocop:enable Security/MarshalLoad
          else raise IOError, "unknown codec #{codec}"
          end
        end

        private

        # Marshal's freeze: leaves objects with their own marshal_load (Date) unfrozen; Psych
        # freezes every node.
        def deep_freeze(value)
          case value
          when Array then value.each { |v| deep_freeze(v) }
          when Hash then value.each { |k, v| deep_freeze(k) || deep_freeze(v) }
          when Range then deep_freeze(value.begin) || deep_freeze(value.end)
          end
          value.freeze
          nil
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
            Codec.new(factory)
          rescue LoadError, StandardError
            false
          end
        end
      end

      # Packs with one shared factory; unpacks with a per-call unpacker (frozen or not).
      class Codec # :nodoc:
        def initialize(factory)
          @factory = factory
          @packer = factory.packer
        end

        def dump(value)
          @factory.dump(value)
        end

        def load(bytes, freeze:)
          @factory.load(bytes, freeze: freeze)
        end
      end
      private_constant :Codec
    end
  end
end

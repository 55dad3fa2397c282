# frozen_string_literal: true

require "loadout/compile_cache"
require "support/compile_cache_store"

module Loadout
  module TestSupport
    # In-process helpers for the YAML and JSON handlers: install the cache on a Hash store for
    # the block, and describe values completely enough to prove two results indistinguishable.
    module CompileCacheValues
      def with_value_cache(files, kinds)
        with_files(files) do |dir|
          store = CompileCacheStore.open(nil)
          Loadout::CompileCache.install!(store: store, iseq: false, yaml: kinds.include?(:yaml),
                                         json: kinds.include?(:json), roots: [dir], racy_ns: 0)
          yield dir, store
        ensure
          Loadout::CompileCache.uninstall!
        end
      end

      # Calls the library's own method, under the cache's hook.
      def uncached(receiver, name, *args, **kw)
        method = receiver.method(name)
        method = method.super_method while method.owner.name.to_s.start_with?("Loadout::")
        method.call(*args, **kw)
      end

      # Class, frozenness, encoding, bytes and sharing of every object reachable from +obj+:
      # equal descriptions mean a program cannot tell the two values apart.
      def describe(obj, seen = {}.compare_by_identity)
        case obj
        when nil, true, false, Integer, Symbol then [obj.class, obj]
        when Float then [Float, [obj].pack("G")]
        else
          # A plain frozen String is described by value: Psych deduplicates hash keys (and, under
          # freeze: true, every String) with String#-@, and which equal Strings of one result end
          # up as one object depends on GC timing (in ~10% of loads of a big locale file some
          # equal keys are distinct objects), so no program can rely on it.
          if obj.instance_of?(String) && obj.frozen? && obj.instance_variables.empty?
            return [String, true, obj.encoding.name, obj.b]
          end
          return [:same_as, seen[obj]] if seen.key?(obj)

          seen[obj] = seen.size
          ivars = obj.instance_variables.map { |iv| [iv, describe(obj.instance_variable_get(iv), seen)] }
          base = [obj.class, obj.frozen?, ivars]
          case obj
          when String then base + [obj.encoding.name, obj.b]
          when Array then base + obj.map { |e| describe(e, seen) }
          when Hash
            base + [obj.default, obj.compare_by_identity?] + obj.map { |k, v| [describe(k, seen), describe(v, seen)] }
          when Range then base + [describe(obj.begin, seen), describe(obj.end, seen), obj.exclude_end?]
          else base + [obj.inspect.gsub(/0x\h+/, "0x"), obj.respond_to?(:marshal_dump) ? obj.marshal_dump.inspect : nil]
          end
        end
      end

      # [:ok, description] or [:raise, class, message].
      def outcome
        [:ok, describe(yield)]
      rescue StandardError, ScriptError => e
        [:raise, e.class, e.message]
      end
    end
  end
end

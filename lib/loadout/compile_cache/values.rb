# frozen_string_literal: true

require_relative "digest"
require_relative "entry"
require_relative "freshness"
require_relative "serializer"
require_relative "value_calls"

module Loadout
  module CompileCache
    # The flow YAML and JSON share: look the file up, validate, deserialise; on a miss run the
    # parser (the caller's block, i.e. the original method) and store what it returned when a
    # codec reproduces it exactly. Errors from the parser propagate untouched and nothing is
    # stored for them; errors of our own fall back to the parser.
    module Values # :nodoc:
      # What one call asks for: the variant's option string, whether results are frozen, and the
      # caller's fallback object when it is not an immediate (returned by identity for an empty
      # document).
      # +plain_source+, when given, is a Regexp that a source must not match for a MessagePack
      # round trip to be trusted without Fidelity's walk (see YAML::PLAIN_SOURCE).
      # +variant+ is filled in on first use (Key#variant of kind and options).
      # +tags+ (YAML): :record marks entries whose source has no tag (Entry::TAG_FREE); :require
      # also serves and stores only those (custom Psych tags are registered: see YAMLTags).
      # +shape+: the call as plain data, for the boot record (ValueCalls); nil when it holds
      # objects that cannot be recorded.
      Call = Struct.new(:kind, :letter, :options, :freeze, :fallback, :plain_source, :variant, :tags, :shape)

      # How many distinct option sets a handler remembers its Call for (see .memo).
      MEMO_LIMIT = 64

      NO_FALLBACK = Object.new.freeze

      class << self
        # The YAML and JSON hooks' shared entry: +original+ is the uncached call. A filename that
        # is not a path, or a call the block says cannot be cached (a Symbol reason), goes to
        # +original+ and is counted as :skipped.
        def fetch_for(ctx, kind, file, original)
          return original.call unless file.is_a?(String) || file.respond_to?(:to_path)

          call = begin
            yield
          rescue StandardError => e
            CompileCache.internal_error(kind, file.to_s, e)
            return original.call
          end
          unless call.is_a?(Call)
            ctx.counters.event(kind, :skipped, file.to_s, call)
            return original.call
          end
          ValueCalls.note(call)
          fetch(ctx, call, file.respond_to?(:to_path) ? file.to_path : file, &original)
        end

        # The Call +build+ returns for +memo_key+, built once: a boot loads hundreds of files with
        # the same few option sets, and building a Call (option string, variant digest) costs more
        # than the rest of a hit. Only keys of plain values should be given (nil when a call's
        # options hold objects that could change), and +memo+ stops growing at MEMO_LIMIT.
        def memo(memo, memo_key)
          return yield if memo_key.nil?

          call = memo[memo_key]
          return call if call

          call = yield
          memo[memo_key] = call if memo.size < MEMO_LIMIT
          call
        end

        def fetch(ctx, call, path)
          begin
            abspath = File.expand_path(path)
            variant = call.variant ||= ctx.key.variant(call.kind, call.options)
            key = ctx.key.for(call.letter, variant, abspath)
            ctx.counters.loaded!(key, abspath) # for `loadout check` (LoadedFiles)
            state = :miss
            if (blob = ctx.store.get(key))
              ctx.counters.add(call.kind, :bytes_read, blob.bytesize)
              state, value = serve(ctx, call, abspath, key, blob)
              return value if state == :served
            end
          rescue EncodingError
            # A path that cannot be expanded in this process's encodings (a default_external that
            # is not ASCII-compatible): nothing wrong with loadout, so no warning.
            ctx.counters.event(call.kind, :skipped, path.to_s.b, :encoding)
            return yield
          rescue StandardError => e
            CompileCache.internal_error(call.kind, path.to_s, e)
            return yield
          end
          parse_and_store(ctx, call, abspath, key, state) { yield }
        end

        private

        # [:served, value] or [event, nil] where event is why it was not served (an event Symbol,
        # or [event, reason]).
        def serve(ctx, call, abspath, key, blob)
          return [:miss, nil] if call.tags == :require && ((blob.getbyte(5) || 0) & Entry::TAG_FREE).zero?

          flags = blob.getbyte(5) # after magic, version
          # One call judges the entry (Freshness): the common answer is the payload alone.
          result = Freshness.serve(ctx, blob.freeze, abspath, key, false)
          return value_of(ctx, call, abspath, :hit, flags, result) if result.is_a?(String)

          verdict, payload, = result
          case verdict
          when :fresh, :fresh_by_record then value_of(ctx, call, abspath, :hit, flags, payload)
          when :revalidated then value_of(ctx, call, abspath, :revalidated, flags, payload)
          when :missing then [:miss, nil]
          when :corrupt then [:corrupt, nil]
          else [:stale, nil] # stale, or negative: the parser's call
          end
        rescue Serializer::CodecUnavailable
          [%i[miss codec_unavailable], nil]
        rescue StandardError
          [:corrupt, nil]
        end

        # The value a valid, non-negative entry stands for, reported as +event+: the caller's own
        # fallback object for an empty document (stale when this call passed none), else the
        # decoded payload.
        def value_of(ctx, call, abspath, event, flags, payload)
          if (flags & Entry::FALLBACK) != 0
            return [:stale, nil] if call.fallback.equal?(NO_FALLBACK)

            value = call.fallback
          else
            value = timed(ctx, call.kind, :load_ns) { Serializer.load(flags & Entry::CODEC, payload, call.freeze) }
          end
          ctx.counters.event(call.kind, event, abspath)
          [:served, value]
        end

        # The file is stat'ed and digested before the parser reads it, so an edit racing the
        # parse leaves an entry whose digest does not match the file: stale next time, never wrong.
        def parse_and_store(ctx, call, abspath, key, state)
          identity = Digest.identity(abspath)
          verified = Freshness.now_ns
          plain = false
          tag_free = false
          digest = identity && timed(ctx, call.kind, :digest_ns) do
            if call.plain_source
              source = read(abspath)
              plain = source && !source.match?(call.plain_source)
              tag_free = source && call.tags && YAMLTags.tag_free?(source)
              source && Digest.xxh64(source)
            else
              Digest.file(abspath)
            end
          end
          if call.tags == :require && !tag_free
            # A tag registered in Psych's tables may change what this file loads as: Psych's call.
            ctx.counters.event(call.kind, :skipped, abspath, :custom_tags)
            return yield
          end
          event, reason = state # a Symbol, or [event, reason]
          ctx.counters.event(call.kind, event, abspath, reason)
          value = timed(ctx, call.kind, :compile_ns) { yield }
          flags = tag_free ? Entry::TAG_FREE : 0
          store(ctx, call, abspath, key, value, [identity, verified, digest, flags], plain) if digest && !ctx.readonly
          value
        end

        def read(path)
          File.binread(path)
        rescue SystemCallError, IOError
          nil
        end

        # +stamp+ is [identity, verified, digest, flags] of the source as it was before parsing
        # (flags: Entry::TAG_FREE or 0). The entry records +abspath+ so a hit at the same path is
        # checked in one call.
        def store(ctx, call, abspath, key, value, stamp, plain)
          identity, verified, digest, flags = stamp
          if !call.fallback.equal?(NO_FALLBACK) && value.equal?(call.fallback)
            ctx.store.put(key, Entry.dump(Entry::FALLBACK | flags, identity, verified, digest, "", path: abspath))
          elsif (codec, bytes = Serializer.dump(value, call.freeze, trust_msgpack: plain))
            ctx.store.put(key, Entry.dump(codec | flags, identity, verified, digest, bytes, path: abspath))
          else
            ctx.counters.event(call.kind, :skipped, key, :unfaithful)
          end
        rescue StandardError => e
          CompileCache.internal_error(call.kind, key, e)
        end

        def timed(ctx, kind, field)
          started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
          result = yield
          ctx.counters.add(kind, field, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
          result
        end
      end
    end
  end
end

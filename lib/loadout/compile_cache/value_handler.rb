# frozen_string_literal: true

require_relative "entries"
require_relative "lazy_hook"
require_relative "value_calls"

module Loadout
  module CompileCache
    # What the YAML and JSON handlers share: a hook prepended to the library's singleton class
    # (when the app loads the library; LazyHook) calls #fetch, which looks the file up and judges
    # its entry (Entries), and on a miss runs the library's own method and stores what it
    # returned when a codec reproduces it exactly (Serializer), else remembers that it cannot
    # (a negative entry, until the file changes). The library's own errors propagate untouched
    # and nothing is stored for them; errors of loadout's own fall back to the library.
    #
    # A subclass defines LIBRARY (the top-level constant its hook goes on), HOOK (the module
    # prepended to it), KIND, LETTER, and a private #memoized_call(method, options) returning a
    # Call or the Symbol reason the call cannot be cached.
    class ValueHandler # :nodoc:
      # What one call asks for: the variant's option string, whether results are frozen, and the
      # caller's fallback object when it is not an immediate (returned by identity for an empty
      # document). +plain_source+, when given, is a Regexp that a source must not match for a
      # MessagePack round trip to be trusted without Fidelity's walk (YAMLHandler::PLAIN_SOURCE);
      # +variant+ is filled in on first use (Key#variant of kind and options); +tags+ (YAML):
      # :record marks entries whose source has no tag (Entry::TAG_FREE), :require also serves and
      # stores only those (custom Psych tags are registered: see YAMLTags); +shape+: the call as
      # plain data, for the boot's record (ValueCalls), nil when it holds objects that cannot be
      # recorded.
      Call = Struct.new(:options, :freeze, :fallback, :plain_source, :variant, :tags, :shape)

      # How many distinct option sets a handler remembers its Call for (see #memo).
      MEMO_LIMIT = 64
      NO_FALLBACK = Object.new.freeze
      # Option values plain enough to key a remembered Call on.
      IMMEDIATES = [NilClass, TrueClass, FalseClass, Integer, Symbol].freeze

      # Extended by each handler's HOOK: the code a call runs is loaded when the hook goes in,
      # i.e. while the app loads the library. Loaded at the first call instead, it would meet
      # whatever the app has done by then (an Encoding.default_external no path is valid in).
      module Preload
        def prepended(_base)
          require_relative "serializer"
        rescue ScriptError, StandardError
          nil # tried again when a value is stored, which falls back to the library if it fails
        end
      end

      # Puts the hook on the library now, or as soon as the app defines it.
      def self.hook!
        LazyHook.on(self::LIBRARY, self::HOOK)
      end

      def initialize(entries)
        @entries = entries
        @counters = entries.counters
        @key = entries.key
        @readonly = entries.readonly?
        @kind = self.class::KIND
        @letter = self.class::LETTER
        @calls = {}
        @entry = Entry # (hot path: see ARCHITECTURE.md)
      end

      # The hooks' entry: never raises an error of loadout's own (the library does the work
      # instead), and lets the library's own errors through untouched. +original+ is the
      # library's own call.
      def fetch(method, file, options, &original)
        return yield unless file.is_a?(String) || file.respond_to?(:to_path)

        call = begin
          memoized_call(method, options)
        rescue StandardError => e
          CompileCache.__internal_error(@kind, file.to_s, e)
          return yield
        end
        unless call.is_a?(Call)
          @counters.event(@kind, :skipped, file.to_s, call)
          return yield
        end
        ValueCalls.note(call)
        lookup(call, file.respond_to?(:to_path) ? file.to_path : file, &original)
      end

      private

      # The Call +build+ returns for +memo_key+, built once: a boot loads hundreds of files with
      # the same few option sets, and building a Call (option string, variant digest) costs more
      # than the rest of a hit. Only keys of plain values should be given (nil when a call's
      # options hold objects that could change), and the memo stops growing at MEMO_LIMIT.
      def memo(memo_key)
        return yield if memo_key.nil?

        call = @calls[memo_key]
        return call if call

        call = yield
        @calls[memo_key] = call if @calls.size < MEMO_LIMIT
        call
      end

      def lookup(call, path)
        begin
          abspath = File.expand_path(path)
          variant = call.variant ||= @key.variant(@kind, call.options)
          key = @key.for(@letter, variant, abspath)
          @counters.loaded!(key, abspath) # for `loadout check` (LoadedFiles)
          state = :miss
          if (blob = @entries.get(key))
            @counters.add(@kind, :bytes_read, blob.bytesize)
            state, value = serve(call, abspath, key, blob)
            return value if state == :served
          end
        rescue EncodingError
          # A path that cannot be expanded in this process's encodings (a default_external that
          # is not ASCII-compatible): nothing wrong with loadout, so no warning.
          @counters.event(@kind, :skipped, path.to_s.b, :encoding)
          return yield
        rescue StandardError => e
          CompileCache.__internal_error(@kind, path.to_s, e)
          return yield
        end
        if state == :negative # decided before: the library's call, nothing stored (value: why)
          @counters.event(@kind, :skipped, abspath, value)
          return yield
        end
        parse_and_store(call, abspath, key, state) { yield }
      end

      # [:served, value], [:negative, reason] or [event, nil] where event is why it was not served
      # (an event Symbol, or [event, reason]).
      def serve(call, abspath, key, blob)
        flags = @entry.flags_of(blob)
        return [:miss, nil] if call.tags == :require && (flags & Entry::TAG_FREE).zero?

        verdict = @entries.judge(blob, abspath, key, false)
        case verdict & 15
        when Freshness::FRESH, Freshness::FRESH_BY_RECORD then value_of(call, abspath, :hit, flags, verdict, blob)
        when Freshness::REVALIDATED then value_of(call, abspath, :revalidated, flags, verdict, blob)
        when Freshness::NEGATIVE then [:negative, blob.force_encoding(Encoding::UTF_8).to_sym]
        when Freshness::MISSING then [:miss, nil]
        when Freshness::STALE then [:stale, nil]
        else [:corrupt, nil]
        end
      rescue Serializer::CodecUnavailable
        [%i[miss codec_unavailable], nil]
      rescue StandardError
        [:corrupt, nil]
      end

      # The value a valid, non-negative entry stands for, reported as +event+: the caller's own
      # fallback object for an empty document (stale when this call passed none), else the
      # decoded payload (+blob+ itself, or inside it when it was stored for another path).
      def value_of(call, abspath, event, flags, verdict, blob)
        if (flags & Entry::FALLBACK) != 0
          return [:stale, nil] if call.fallback.equal?(NO_FALLBACK)

          value = call.fallback
        else
          payload = (verdict & Freshness::MOVED).zero? ? blob : Entry.load(blob).payload
          value = timed(:load_ns) { Serializer.load(flags & Entry::CODEC, payload, call.freeze) }
        end
        @counters.event(@kind, event, abspath)
        [:served, value]
      end

      # The file is stat'ed and digested before the library reads it, so an edit racing the parse
      # leaves an entry whose digest does not match the file: stale next time, never wrong.
      def parse_and_store(call, abspath, key, state)
        identity = Freshness.identity(abspath)
        verified = Freshness.now_ns
        plain = false
        tag_free = false
        digest = identity && timed(:digest_ns) do
          if call.plain_source
            source = read(abspath)
            plain = source && !source.match?(call.plain_source)
            tag_free = source && call.tags && YAMLTags.tag_free?(source)
            source && XXH64.digest(source)
          else
            XXH64.file(abspath)
          end
        end
        if call.tags == :require && !tag_free
          # A tag registered in Psych's tables may change what this file loads as: Psych's call.
          @counters.event(@kind, :skipped, abspath, :custom_tags)
          return yield
        end
        event, reason = state # a Symbol, or [event, reason]
        @counters.event(@kind, event, abspath, reason)
        value = timed(:compile_ns) { yield }
        flags = tag_free ? Entry::TAG_FREE : 0
        store(call, abspath, key, value, [identity, verified, digest, flags], plain) if digest && !@readonly
        value
      end

      def read(path)
        File.binread(path)
      rescue SystemCallError, IOError
        nil
      end

      # +stamp+ is [identity, verified, digest, flags] of the source as it was before parsing
      # (flags: Entry::TAG_FREE or 0). The entry records +abspath+ so a hit at the same path is
      # judged in one call. A value no codec reproduces, or one too large for the store, is
      # remembered as such: a negative entry with the reason, so no later boot serializes it
      # again before the file changes.
      def store(call, abspath, key, value, stamp, plain)
        identity, verified, digest, flags = stamp
        if !call.fallback.equal?(NO_FALLBACK) && value.equal?(call.fallback)
          return @entries.put(key, Entry.dump(Entry::FALLBACK | flags, identity, verified, digest, "", path: abspath))
        end

        limit = Store::Format::MAX_VALUE - Entry::HEAD - abspath.bytesize
        codec, bytes = dumped = Serializer.dump(value, call.freeze, plain: plain, tree: tree?, limit: limit)
        if dumped.is_a?(Symbol) # why it cannot be stored
          @counters.event(@kind, :skipped, abspath, dumped)
          entry = Entry.dump(Entry::NEGATIVE | flags, identity, verified, digest, dumped.to_s, path: abspath)
        else
          entry = Entry.dump(codec | flags, identity, verified, digest, bytes, path: abspath)
          bytes.clear
        end
        @entries.put(key, entry)
      rescue StandardError => e
        CompileCache.__internal_error(@kind, key, e)
      end

      # Whether what the library returns is known to be a tree: no object in it reached twice, so
      # no serializer can expand it. Subclasses say.
      def tree?
        false
      end

      def timed(field)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        result = yield
        @counters.add(@kind, field, Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - started)
        result
      end
    end
  end
end

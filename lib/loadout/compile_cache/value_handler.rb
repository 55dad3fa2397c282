# frozen_string_literal: true

require_relative "lazy_hook"

module Loadout
  module CompileCache
    # What the YAML and JSON handlers share: installing on a context and the entry point their
    # hooks call. A handler extends it and defines LIBRARY (the top-level constant its Hook is
    # prepended to), KIND, Hook, and a private memoized_call(method, options) returning a
    # Values::Call or the Symbol reason the call cannot be cached.
    module ValueHandler # :nodoc:
      # Option values plain enough to key a remembered Call on (see Values.memo).
      IMMEDIATES = [NilClass, TrueClass, FalseClass, Integer, Symbol].freeze

      # Extended by each handler's Hook: what a call needs is loaded when the hook goes in, i.e.
      # while the app loads the library. Loaded at the first call instead, it would meet whatever
      # the app has done by then (an Encoding.default_external that no path is valid in).
      module Preload
        def prepended(_base)
          Values
        rescue ScriptError, StandardError
          nil # tried again at the first call, which falls back to the library if it fails
        end
      end

      def install!(ctx)
        @ctx = ctx
        @kind = self::KIND
        @calls = {}
        LazyHook.on(self::LIBRARY, self::Hook)
      end

      def uninstall!
        @ctx = nil
      end

      # The hooks' entry: never raises an error of loadout's own (the library does the work
      # instead), and lets the library's own errors through untouched.
      def fetch(method, file, options, &original)
        ctx = @ctx or return yield
        values = begin
          Values
        rescue ScriptError, StandardError => e
          @ctx = nil # no cache for this library from here on: one warning, then plain calls
          CompileCache.internal_error(@kind, file.to_s, e)
          return yield
        end
        values.fetch_for(ctx, @kind, file, original) { memoized_call(method, options) }
      end
    end
  end
end

# frozen_string_literal: true

require "loadout/compile_cache/lazy_hook"

module Loadout
  module CompileCache
    # What the YAML and JSON handlers share: installing on a context and the entry point their
    # hooks call. A handler extends it and defines LIBRARY (the top-level constant its Hook is
    # prepended to), KIND, Hook, and a private memoized_call(method, options) returning a
    # Values::Call or the Symbol reason the call cannot be cached.
    module ValueHandler # :nodoc:
      # Option values plain enough to key a remembered Call on (see Values.memo).
      IMMEDIATES = [NilClass, TrueClass, FalseClass, Integer, Symbol].freeze

      def install!(ctx)
        @ctx = ctx
        @kind = self::KIND
        @calls = {}
        LazyHook.on(self::LIBRARY, self::Hook)
      end

      def uninstall!
        @ctx = nil
      end

      def fetch(method, file, options, &original)
        ctx = @ctx or return yield
        Values.fetch_for(ctx, @kind, file, original) { memoized_call(method, options) }
      end
    end
  end
end

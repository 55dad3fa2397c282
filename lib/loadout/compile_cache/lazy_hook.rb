# frozen_string_literal: true

module Loadout
  module CompileCache
    # Prepends a hook to a library's singleton class as soon as the library's module exists,
    # without requiring the library (a program that never loads YAML must not see Psych appear
    # because of loadout). A prepended module takes precedence over methods the library defines
    # afterwards, so the hook may go in as soon as the module is opened.
    #
    # How "as soon as" is noticed:
    # - With the ISeq handler on, ISeqHandler#fetch calls #poll before every Ruby file Ruby loads
    #   (one Hash#empty? check once nothing is left to wait for); a library that defines its
    #   module and then requires more of its own files is hooked while it loads.
    # - Without it, a TracePoint on module bodies waits for the module. Not used with the ISeq
    #   handler on: while any TracePoint is enabled, Ruby rewrites every instruction sequence it
    #   loads for tracing, which made each cached load markedly slower.
    # Until then the library's methods simply run uncached.
    module LazyHook # :nodoc:
      @waiting = {}
      @trace = nil

      class << self
        # Prepends +hook+ to the singleton class of the top-level constant +name+, now or later.
        def on(name, hook) #: (Symbol, Module) -> void
          @waiting[name] = hook
          poll
        end

        def waiting? #: () -> bool
          !@waiting.empty?
        end

        # Attaches the hooks whose module now exists. An autoload is not triggered.
        def poll #: () -> void
          @waiting.delete_if do |name, hook|
            next false unless Object.const_defined?(name, false) && !Object.autoload?(name)

            attach(Object.const_get(name, false), hook)
            true
          end
          stop_trace if @waiting.empty?
        end

        # Falls back to a TracePoint on module bodies (used when no ISeq hook polls).
        def trace! #: () -> void
          return if @trace || @waiting.empty?

          @trace = TracePoint.new(:class) do |tp|
            target = tp.self
            poll if target.is_a?(Module) && (name = target.name) && @waiting.key?(name.to_sym)
          end
          @trace.enable
        end

        private

        def attach(mod, hook)
          mod.singleton_class.prepend(hook) unless mod.singleton_class.include?(hook)
        end

        def stop_trace
          return unless @trace

          @trace.disable
          @trace = nil
        end
      end
    end
  end
end

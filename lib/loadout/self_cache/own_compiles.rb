# frozen_string_literal: true

module Loadout
  module SelfCache
    # Keeps what Ruby compiles of loadout's own files that the self cache has no entry for (all of
    # them on a cold boot, a new loadout or Ruby; a file a boot loads for the first time, as
    # stats.rb under LOADOUT_STATS), so the self cache written at exit is made of those compiles'
    # binaries instead of compiling each file a second time (ISeqBuild). Loaded only then: a boot
    # served by the self cache never compiles this file (and it is never written to it).
    #
    # The compile cache's Capture rules, for the same reasons: the file's stat is taken at the
    # miss, before Ruby reads it, and the entry is made only if it is still the file's stat after
    # the compile (then the digest describes what Ruby compiled); a file whose compile printed a
    # warning is left to ISeqBuild, which makes it a negative entry or one marked as warning under
    # -w. A compile without -w does not say what -w would print: that entry is marked
    # VERBOSE_WARNINGS (not served under -w) and the self cache file says it was captured, so the
    # first boot under -w writes it again with ISeqBuild.
    class OwnCompiles # :nodoc:
      # Passes each warning to the OwnCompiles running, if any (prepended to Warning's singleton
      # class once, by the first one; it does nothing once that one stopped).
      module WarningTap
        def warn(message, *args, **kw)
          OwnCompiles.running&.warned(message) if message.is_a?(String)
          kw.empty? ? super(message, *args) : super
        end
      end

      @running = nil

      class << self
        attr_accessor :running
      end

      def initialize
        @pending = {} # path => its stat at the miss (Native.file_identity)
        @captured = {} # path => [ISeq, stat at the miss, $VERBOSE when Ruby compiled it]
        @warned = {} # paths whose compile printed a warning
        Warning.singleton_class.prepend(WarningTap) unless Warning.singleton_class.include?(WarningTap)
        OwnCompiles.running = self
        @tracepoint = TracePoint.new(:script_compiled) { |tp| compiled(tp) }
        @tracepoint.enable
      end

      # A miss of +path+, one of loadout's files Ruby is about to compile: its stat now.
      def expect(path) #: (String) -> void
        identity = Native.file_identity(path) and @pending[path] = identity
      end

      # Called by WarningTap: a warning Ruby printed.
      def warned(message) #: (String) -> void
        path = message[/\A(.+?):\d+: warning: /, 1]
        @warned[path] = true if path && @pending.key?(path)
      end

      # Stops capturing (setup is over).
      def stop #: () -> void
        @tracepoint.disable
        OwnCompiles.running = nil if OwnCompiles.running.equal?(self)
        @pending.clear
      end

      # { path => entry } for the captured files whose stat is still the one taken at their miss,
      # made as CompileCache::Capture makes them (compile cache files: called at exit).
      def entries #: () -> Hash[String, String]
        entry = CompileCache::Entry
        @captured.each_with_object({}) do |(path, (iseq, identity, verbose)), out|
          source = Trust.read_source(path) or next
          next unless Native.file_identity(path) == identity

          digest = CompileCache::XXH64.digest(source)
          paths = [path, iseq.absolute_path.to_s]
          binary = iseq.to_binary
          flags = entry::RAW
          flags |= entry::VERBOSE_WARNINGS unless verbose
          if paths.any? { |p| source.include?(entry.bytes(p)) } ||
             CompileCache::ISeqBinary.mentioned_outside_objects?(binary, paths)
            flags |= entry::PINNED_PATH
          end
          out[path] = entry.dump(flags, identity, CompileCache::Freshness.now_ns, digest, binary,
                                 path: paths[0], realpath: paths[1])
        rescue StandardError
          next # (ISeqBuild makes it)
        end
      end

      private

      def compiled(tp)
        return if tp.eval_script

        iseq = tp.instruction_sequence
        path = iseq.path
        identity = @pending.delete(path) or return
        @captured[path] = [iseq, identity, $VERBOSE == true] unless @warned.delete(path)
      end
    end
  end
end

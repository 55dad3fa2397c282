# frozen_string_literal: true

require_relative "entry"
require_relative "freshness"
require_relative "iseq_binary"

module Loadout
  module CompileCache
    # Compiles a file for the store itself, where a boot stores what Ruby compiled (Capture):
    # `loadout precompile` (ISeqHandler#precompile) and loadout's own self cache (SelfCache).
    # compile_file names the top level "<main>", so the binary gets Ruby's own labels
    # (ISeqBinary) and is loaded once before it is stored.
    module ISeqBuild # :nodoc:
      TOP_LABEL = "<top (required)>"

      # Collects warnings while .entry compiles (only on the thread that asked).
      module WarningCapture
        def warn(message, *args, **kw)
          captured = Thread.current[:__loadout_warnings]
          return super unless captured

          captured << message
          nil
        end
      end

      class << self
        # The bytes to store for +path+: an entry with the binary, or a negative entry when Ruby
        # must compile the file itself (syntax error, a source we cannot relabel safely).
        # nil when the file cannot be read.
        #: (String, Hash[Symbol, untyped]) -> String?
        def entry(path, options)
          identity = Freshness.identity(path) or return nil
          verified = Freshness.now_ns
          # Only a regular file, read from a descriptor opened non-blocking and checked with fstat:
          # a FIFO in the list (a program that loads one) never blocks the compiler. compile_file
          # opens the path again; a file swapped for a FIFO in between is what precompile's
          # worker time limit is for.
          source = Trust.read_source(path) or return nil
          digest = XXH64.digest(source)
          negative = ->(why) { Entry.dump(Entry::NEGATIVE, identity, verified, digest, why.to_s) }
          binary, warned, iseq = binary_for(path, source, options)
          return negative.call(warned) unless binary

          flags = Entry::RAW
          flags |= Entry::VERBOSE_WARNINGS if warned
          # A path the source spells out, or one folded into a longer literal, cannot be moved.
          paths = [iseq.path, iseq.absolute_path.to_s]
          if paths.any? { |p| source.include?(p.b) } || ISeqBinary.mentioned_outside_objects?(binary, paths)
            flags |= Entry::PINNED_PATH
          end
          Entry.dump(flags, identity, verified, digest, binary, path: iseq.path, realpath: iseq.absolute_path.to_s)
        rescue SystemCallError, IOError
          nil
        end

        # What Ruby's require would run of +source+ (the file at +path+, compiled with +options+): [the
        # ISeq binary, with Ruby's labels (ISeqBinary), whether the compile warns under -w only, the
        # ISeq], or [nil, why] when Ruby must compile the file itself. (Also what `loadout prelude`
        # records, so the prelude serves what the compile cache would.)
        #: (String, String, Hash[Symbol, untyped]) -> [String?, untyped, RubyVM::InstructionSequence?]
        def binary_for(path, source, options)
          # A literal "<main>" is the same object as the label it would be renamed with.
          return [nil, :label_literal] if source.include?("<main>")

          begin
            iseq, warned = compile_watching_warnings(path, options, true)
            # Ruby prints parse warnings each time it compiles the file; a cached ISeq would not.
            # Warnings shown at the default level make the file Ruby's to compile; warnings shown
            # only under -w make it Ruby's only in processes that run with -w.
            return [nil, :compile_warnings] if warned && compile_watching_warnings(path, options, false)[1]
          rescue SyntaxError, ScriptError
            return [nil, :syntax_error]
          end
          binary = ISeqBinary.rewrite(iseq.to_binary, {}, labels: true)
          return [nil, :format] unless binary && loads_as?(binary, iseq)

          [binary, warned, iseq]
        end

        private

        # Compiles at the given $VERBOSE level and reports whether the parser warned. Warnings go
        # to a capture, not to stderr.
        def compile_watching_warnings(path, options, level)
          Warning.singleton_class.prepend(WarningCapture) unless Warning.singleton_class.include?(WarningCapture)
          verbose = $VERBOSE
          captured = Thread.current[:__loadout_warnings] = []
          $VERBOSE = level
          [RubyVM::InstructionSequence.compile_file(path, options), !captured.empty?]
        ensure
          $VERBOSE = verbose
          Thread.current[:__loadout_warnings] = nil
        end

        def loads_as?(binary, iseq)
          loaded = RubyVM::InstructionSequence.load_from_binary(binary)
          loaded.label == TOP_LABEL && loaded.path == iseq.path && loaded.absolute_path == iseq.absolute_path
        rescue StandardError
          false
        end
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  class CLI
    # loadout's own files for `loadout precompile`: a boot's setup loads about 45 of them before
    # its compile cache can serve anything, and only the self cache (SelfCache) serves those. A
    # boot writes it at exit when it is missing; precompile writes it when no boot has (the walk
    # form), so the first boot of an image compiles none of loadout's files either. Every file of
    # loadout's runtime is in it (not the CLI's, Rake's, the Journal's or the prelude's):
    # whichever a boot loads.
    module SelfFiles # :nodoc:
      LIB = File.expand_path("../..", __dir__)
      LEFT_OUT = %r{\A#{Regexp.escape(LIB)}/loadout/(cli|rake|journal|prelude)[/.]}.freeze

      # Writes the self cache of +ctx+'s store unless one is there; returns a note for the summary.
      #: (Context) -> String?
      def self.fill(ctx)
        return nil unless BACKEND == :native && ctx.config.compile_cache.include?(:iseq)

        cache = Boot.component(:CompileCache)
        return nil unless cache.respond_to?(:supported?) && cache.supported?(:iseq)

        path = SelfCache.path_for(ctx.store_path)
        return "loadout's own files: self cache already written" if File.file?(path)

        require_relative "../compile_cache/iseq_build" # (ISeqBuild.entry: what a boot's exit uses)
        files = Dir.glob(File.join(LIB, "loadout/**/*.rb")).sort.grep_v(LEFT_OUT)
        # Written in the cache dir the store was opened in (checked and held open), as a boot does.
        ctx.with_store(write: true) do |store|
          dir = store.__dir or break
          SelfCache.write(dir, File.basename(path), files, RubyVM::InstructionSequence.compile_option)
        end
        File.file?(path) ? "loadout's own files: #{files.size} compiled into the self cache" : nil
      end
    end
  end
end

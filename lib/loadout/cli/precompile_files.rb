# frozen_string_literal: true

module Loadout
  class CLI
    # Compiles files into the compile cache in this process: the body of every
    # `loadout precompile` worker, and of a run too small for workers (see Precompile).
    #
    # Yields one line per file: "ok", "bad" (the file does not load: a YAML or JSON syntax error,
    # an unreadable file; a boot that loads it raises the same error with or without loadout, so
    # it is reported as skipped, not as a failure), or "skip" (no compile cache in this build).
    class PrecompileFiles # :nodoc:
      # `loadout __worker --kinds iseq,yaml --roots A:B LISTFILE`: one worker process.
      def self.worker(cli, argv)
        kinds = nil
        roots = nil
        _rest, ctx = cli.parse(argv[0...-1], "__worker", "internal") do |o|
          o.on("--kinds LIST") { |v| kinds = v }
          o.on("--roots LIST") { |v| roots = v.split(File::PATH_SEPARATOR) }
        end
        # Written in binary by WorkerPool; tagged back as the file system's, like Scan's paths.
        files = File.binread(argv.last).force_encoding(Encoding.find("filesystem")).split("\0")
        new(roots).compile(ctx, files, kinds.to_s.split(",").map(&:to_sym)) do |line|
          cli.out.puts line
          cli.out.flush
        end
        0
      end

      # +roots+: the compile cache's roots as the app's boot computes them (nil: the config's).
      def initialize(roots)
        @roots = roots
      end

      # Compiles +files+ (paths) in this process; yields one progress line per file.
      def compile(ctx, files, kinds)
        cache = Boot.component(:CompileCache)
        unless cache
          files.each { |path| yield "skip\t#{path}\tcompile cache not available in this build" }
          return
        end

        ctx.with_store(write: true) do |store|
          flags = FileSelection::KINDS.keys.to_h { |k| [k, kinds.include?(k)] }
          begin
            cache.install!(store: store, **flags, **precompile_options(cache), readonly: false,
                           trust: ctx.config.compile_cache_trust, roots: @roots || ctx.config.roots)
          rescue StandardError, LoadError => e
            cache.uninstall! rescue nil # a half-done install must not keep hooks on a closed store
            files.each { |path| yield "skip\t#{path}\tcompile cache failed to install: #{e.class}: #{e.message}" }
            return
          end
          begin
            files.each do |path|
              compile_one(cache, path)
              yield "ok\t#{path}"
            rescue StandardError, ScriptError => e # the file's own error: see the class comment
              yield "bad\t#{path}\t#{e.class}: #{e.message.lines.first&.chomp&.delete_prefix("(#{path}): ")}"
            end
            drain_misses(cache)
            store.flush
          ensure
            cache.uninstall!
          end
        end
      end

      private

      # Compile now, in this process: a background or at-exit compile would outlive the worker's
      # point (CompileCache's miss_compile option, when it has one).
      def precompile_options(cache)
        params = cache.method(:install!).parameters.map(&:last)
        params.include?(:miss_compile) ? { miss_compile: :exit } : {}
      end

      # The compile cache defers writing misses to exit (so a first boot costs what plain Ruby
      # costs); precompile wants them written now, while the store is open.
      def drain_misses(cache)
        writer = cache.respond_to?(:context) && cache.context.respond_to?(:writer) && cache.context.writer
        writer.run if writer.respond_to?(:run)
      end

      def compile_one(cache, path)
        if cache.respond_to?(:precompile)
          cache.precompile(path)
          return
        end

        case FileSelection.kind_of(path)
        when :iseq
          # RubyVM is CRuby's (run has left :iseq out elsewhere); a worker asked anyway does nothing.
          RubyVM::InstructionSequence.load_iseq(path) if defined?(RubyVM::InstructionSequence.load_iseq)
        when :yaml
          require "yaml"
          # The YAML cache keys by method: fill both an app may call. load_file (safe in Psych 4)
          # may refuse a file unsafe_load_file reads; only a file neither can read is a failure.
          unless YAML.respond_to?(:unsafe_load_file)
            YAML.load_file(path)
            return
          end
          begin
            YAML.load_file(path)
          rescue Psych::DisallowedClass, Psych::BadAlias
            nil
          end
          YAML.unsafe_load_file(path)
        when :json
          require "json"
          JSON.load_file(path)
        end
      end
    end
  end
end

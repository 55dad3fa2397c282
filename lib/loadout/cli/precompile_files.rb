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
            cache.install!(store: store, **flags, readonly: false, trust: ctx.config.compile_cache_trust,
                           roots: @roots || ctx.config.roots)
          rescue StandardError, LoadError => e
            cache.uninstall! rescue nil # a half-done install must not keep hooks on a closed store
            files.each { |path| yield "skip\t#{path}\tcompile cache failed to install: #{e.class}: #{e.message}" }
            return
          end
          begin
            files.each do |path|
              cache.precompile(path)
              yield "ok\t#{path}"
            rescue StandardError, ScriptError => e # the file's own error: see the class comment
              yield "bad\t#{path}\t#{e.class}: #{e.message.lines.first&.chomp&.delete_prefix("(#{path}): ")}"
            end
            store.flush
          ensure
            cache.uninstall!
          end
        end
      end
    end
  end
end

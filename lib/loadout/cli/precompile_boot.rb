# frozen_string_literal: true

require "open3"

module Loadout
  class CLI
    # The boot half of `loadout precompile -- COMMAND`: runs the app's own boot (e.g.
    # `bin/rails runner 1` in production) once, with loadout writing into the cache precompile
    # fills, so the cache holds everything that boot loads, exactly as it loads it: every Ruby file
    # it requires after setup (Ruby's standard library and loadout's own included), every YAML and
    # JSON value under the call shape the app uses (locale files I18n finds outside any require
    # path), the load-path index for its $LOAD_PATH. No directory walk can know those.
    #
    # The boot runs with LOADOUT_RECORD=1: it records what it loaded (what `loadout check` then
    # answers for), its $LOAD_PATH and its YAML/JSON call shapes even when it finds everything
    # cached already (a second precompile). It runs with loadout on and writing, whatever
    # LOADOUT_DISABLE / LOADOUT_READONLY say in the build's environment, in the app root; its
    # output goes to precompile's stderr.
    class PrecompileBoot # :nodoc:
      # What the boot did: its exit status, how long it took, and its last-boot record (LastBoot),
      # nil when it did not set loadout up with this cache dir.
      Outcome = Struct.new(:command, :status, :seconds, :record, keyword_init: true) do
        def success?
          status&.success? && !record.nil?
        end

        # "boot `bin/rails runner 1` (2.1 s): 1,884 Ruby files loaded through the cache, 1,787 stored; ..."
        def summary
          return "boot `#{command.join(" ")}` did not set loadout up" unless record

          kinds = %w[iseq yaml json].filter_map do |kind|
            looked = %w[hits misses stale revalidated].sum { |f| record["compile_cache.#{kind}.#{f}"].to_i }
            next if looked.zero?

            stored = record["compile_cache.#{kind}.#{kind == "iseq" ? "compiles" : "misses"}"].to_i
            "#{kind} #{looked} (#{stored} new)"
          end
          listed = record["load_path.rescans"]
          index = listed.nil? ? "" : ", load path #{listed} dirs listed"
          loaded = kinds.empty? ? "nothing loaded" : kinds.join(", ")
          format("boot `%s` (%.1f s): %s%s", command.join(" "), seconds, loaded, index)
        end
      end

      # Whatever the caller's environment says, the boot runs with loadout on and writing.
      LOADOUT_ON = { "LOADOUT_DISABLE" => nil, "LOADOUT_READONLY" => nil, "LOADOUT_RECORD" => "1" }.freeze

      # Runs +command+ for the cache of +ctx+; its output goes to +err+. +cli_env+: the CLI's
      # environment, whose BUNDLE_GEMFILE (the app's, under `bundle exec`) the boot gets too.
      #: (Context, Array[String], untyped, ?Hash[String, String]) -> Outcome
      def self.run(ctx, command, err, cli_env = {})
        env = unbundled.merge(LOADOUT_ON).merge("LOADOUT_CACHE_DIR" => ctx.config.cache_dir)
        env["BUNDLE_GEMFILE"] = cli_env["BUNDLE_GEMFILE"] if cli_env["BUNDLE_GEMFILE"]
        before = LastBoot.read(ctx.store_path)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        status = spawn(env, command, ctx.config.root, err)
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        after = LastBoot.read(ctx.store_path)
        # A record this boot left (the pid of a process it started, when it execs or forks).
        record = after && after != before ? after : nil
        Outcome.new(command: command, status: status, seconds: seconds, record: record)
      end

      # The app boots without `bundle exec` (a container's CMD, a CI step's bin/rails): what
      # `bundle exec loadout precompile` added to the environment is taken out of the boot's
      # (Bundler.original_env), or the boot would load other files. Bundler 2.5+ exports
      # BUNDLER_SETUP, which RubyGems 3.5+ requires before did_you_mean, error_highlight and
      # syntax_suggest load: an installed copy of one of them (Debian's, a newer gem) was on the
      # app's $LOAD_PATH and not on the boot's, and the app's first boot listed its dir. PATH
      # stays (the bundle's bin dir finds a COMMAND such as `rails`; it loads nothing).
      def self.unbundled
        return {} unless defined?(::Bundler) && ::Bundler.respond_to?(:original_env)

        original = ::Bundler.original_env
        (ENV.keys | original.keys).each_with_object({}) do |k, h|
          h[k] = original[k] if ENV[k] != original[k] && k != "PATH"
        end
      end

      def self.spawn(env, command, dir, err)
        if err.is_a?(IO)
          pid = Process.spawn(env, *command, chdir: dir, in: File::NULL, out: err, err: err)
          Process.wait2(pid).last
        else # (a StringIO: tests that run the CLI in-process)
          output, status = Open3.capture2e(env, *command, chdir: dir, stdin_data: "")
          err.write(output)
          status
        end
      rescue SystemCallError => e
        raise Error, "precompile: cannot run `#{command.join(" ")}` in #{dir} (#{e.message}); give the command " \
                     "that boots the app after --, e.g. `loadout precompile -- bin/rails runner 1`"
      end
      private_class_method :spawn, :unbundled
    end
  end
end

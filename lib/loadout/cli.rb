# frozen_string_literal: true

require "optparse"
require "rbconfig"
require_relative "../loadout"
require_relative "env"

module Loadout
  # `loadout COMMAND [options]`. Each command is a `<name>_command(argv)` method returning an
  # Integer exit status; `run` turns usage errors into message + usage on stderr and exit 1, and
  # any other failure into one line (the backtrace only with --debug).
  class CLI
    autoload :Context, File.expand_path("cli/context", __dir__)
    autoload :Precompile, File.expand_path("cli/precompile", __dir__)
    autoload :PrecompileFiles, File.expand_path("cli/precompile_files", __dir__)
    autoload :PrecompileIndex, File.expand_path("cli/precompile_index", __dir__)
    autoload :PrecompileBoot, File.expand_path("cli/precompile_boot", __dir__)
    autoload :SelfFiles, File.expand_path("cli/self_files", __dir__)
    autoload :Check, File.expand_path("cli/check", __dir__)
    autoload :StoreCommands, File.expand_path("cli/store_commands", __dir__)
    autoload :StatsCommand, File.expand_path("cli/stats_command", __dir__)
    autoload :WorkerPool, File.expand_path("cli/worker_pool", __dir__)
    autoload :Progress, File.expand_path("cli/progress", __dir__)
    autoload :AppBundle, File.expand_path("cli/app_bundle", __dir__)
    autoload :FileSelection, File.expand_path("cli/file_selection", __dir__)
    autoload :CheckFiles, File.expand_path("cli/check_files", __dir__)
    autoload :Bench, File.expand_path("cli/bench", __dir__)
    autoload :GCCommand, File.expand_path("cli/gc_command", __dir__)
    autoload :PreludeCommand, File.expand_path("cli/prelude_command", __dir__)

    COMMANDS = {
      "precompile" => "fill the caches for the next boot (boot the app with -- COMMAND; walk dirs; build the index)",
      "check" => "tell, without booting the app, whether the next boot will hit the caches",
      "stats" => "store size, live/garbage, entries per kind/variant, last boot's hit rates",
      "compact" => "rewrite the store without dead records and entries that can never be served again",
      "clean" => "delete cache entries (--all, or by --kind / --variant)",
      "bench" => "time this app's boot: plain Ruby, and loadout cold, warm and CI-style",
      "gc" => "the RUBY_GC_* settings for this app's boot, from what the last boot ended with",
      "prelude" => "serve RubyGems' and Bundler's own files compiled to every Ruby process (a RUBYLIB dir)",
      "version" => "print the version"
    }.freeze

    USAGE = <<~TEXT
      Usage: loadout COMMAND [options]   (loadout COMMAND --help for a command's options)

      Commands:
      #{COMMANDS.map { |name, text| format("  %-11s %s", name, text) }.join("\n")}

      Options for every command:
        --cache-dir DIR   the cache directory (default: $LOADOUT_CACHE_DIR or tmp/cache/loadout
                          under the directory of the Gemfile)
        --debug           print the backtrace of an unexpected error
    TEXT

    attr_reader :out, :err, :env

    def initialize(argv, out: $stdout, err: $stderr, env: ENV)
      @argv = argv.dup
      @out = out
      @err = err
      @env = env
      @debug = false
    end

    # Runs the command; returns its exit status.
    #: () -> Integer
    def run
      @debug = !@argv.delete("--debug").nil?
      command = @argv.shift
      case command
      when "-h", "--help", "help"
        out.puts USAGE
        0
      when "-v", "--version"
        version_command([])
      when nil
        usage_error("no command given")
      else
        name = command.tr("-", "_")
        return usage_error("unknown command: #{command}") unless COMMANDS.key?(command) || name == "__worker"

        public_send("#{name}_command", @argv)
      end
    rescue UsageError => e
      usage_error(e.message, e.usage || USAGE)
    rescue ConfigError, Error => e # a bad setting, an unusable cache dir: the message says it all
      err.puts "loadout: #{e.message}"
      1
    rescue Interrupt
      err.puts "loadout: interrupted"
      130
    rescue StandardError, ScriptError => e
      err.puts "loadout: #{e.class}: #{e.message}"
      if @debug
        err.puts e.backtrace
      else
        err.puts "(run with --debug for the backtrace)"
      end
      1
    end

    def precompile_command(argv)
      Precompile.new(self, argv).run
    end

    # Hidden: one precompile worker process (spawned by precompile; not for people).
    def __worker_command(argv) # :nodoc:
      PrecompileFiles.worker(self, argv)
    end

    def check_command(argv)
      Check.new(self, argv).run
    end

    def stats_command(argv)
      StatsCommand.new(self, argv).run
    end

    def compact_command(argv)
      StoreCommands.new(self, argv).compact
    end

    def clean_command(argv)
      StoreCommands.new(self, argv).clean
    end

    def bench_command(argv)
      Bench.new(self, argv).run
    end

    def gc_command(argv)
      GCCommand.new(self, argv).run
    end

    def prelude_command(argv)
      PreludeCommand.new(self, argv).run
    end

    def version_command(argv)
      parse(argv, "version", "Usage: loadout version")
      out.puts "loadout #{Loadout::VERSION} (#{Loadout::BACKEND} backend, #{RUBY_DESCRIPTION})"
      0
    end

    # Parses +argv+ for one command: adds --cache-dir and --help, raises UsageError on a bad
    # option. Returns [remaining args, Context] (nil Context when --help was printed).
    #: (Array[String], String, String) ?{ (OptionParser) -> void } -> [Array[String], Context?]
    def parse(argv, command, banner)
      cache_dir = nil
      help = false
      parser = OptionParser.new do |o|
        o.banner = banner
        o.separator ""
        yield o if block_given?
        o.on("--cache-dir DIR", "cache directory (default: $LOADOUT_CACHE_DIR or tmp/cache/loadout)") do |v|
          cache_dir = v
        end
        o.on("-h", "--help", "show this help") { help = true }
      end
      rest = begin
        parser.parse(argv)
      rescue OptionParser::ParseError => e
        raise UsageError.new("#{command}: #{e.message}", parser.help)
      end
      if help
        out.puts parser.help
        return [rest, nil]
      end
      [rest, Context.new(env, cache_dir, parser.help)]
    end

    private

    def usage_error(message, usage = USAGE)
      err.puts "loadout: #{message}"
      err.puts
      err.puts usage
      1
    end
  end
end

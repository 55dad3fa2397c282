# frozen_string_literal: true

# The environment's settings for loadout: the only place that reads LOADOUT_* variables (README
# "Configuration" lists every one of them). Requiring it does nothing: the loadout/setup entry point
# sets up with it, and the CLI reads the same settings without setting up its own process.

require_relative "../loadout"
require_relative "app_root"

module Loadout
  # Environment → Config. Values are parsed strictly: a value loadout does not understand raises
  # ConfigError naming the variable, instead of silently meaning something else.
  module Env # :nodoc:
    DEFAULT_CACHE_DIR = "tmp/cache/loadout"
    CACHE_DIR_ACCEPTED = "a directory path (relative to the app root, or absolute)"
    # One switch per compile cache kind, on top of LOADOUT_DISABLE_COMPILE_CACHE (which turns
    # them all off): the workaround when one cache meets a problem.
    KIND_SWITCHES = { iseq: "LOADOUT_DISABLE_ISEQ_CACHE", yaml: "LOADOUT_DISABLE_YAML_CACHE",
                      json: "LOADOUT_DISABLE_JSON_CACHE" }.freeze

    class << self
      # Reads +env+ and calls Loadout.setup; returns false without doing anything when
      # LOADOUT_DISABLE is set.
      #: (?Hash[String, String]) -> bool
      def run(env = ENV)
        config = config_from(env) or return false
        Loadout.__boot(config)
      end

      # The Config +env+ asks for, or nil when LOADOUT_DISABLE is on.
      #: (Hash[String, String]) -> Config?
      def config_from(env)
        Native.pure_requested?(env) # validates LOADOUT_PURE (native.rb already acted on it)
        return nil if boolean(env, "LOADOUT_DISABLE", false)

        opts = {
          root: app_root(env),
          cache_dir: string(env, "LOADOUT_CACHE_DIR", CACHE_DIR_ACCEPTED) || DEFAULT_CACHE_DIR,
          load_path_cache: !boolean(env, "LOADOUT_DISABLE_LOAD_PATH_CACHE", false),
          compile_cache: compile_kinds(env),
          development_mode: development_mode?(env),
          readonly: boolean(env, "LOADOUT_READONLY", false),
          trust: trust(env),
          trust_shared_cache: boolean(env, "LOADOUT_TRUST_SHARED_CACHE", false),
          log: boolean(env, "LOADOUT_LOG", false),
          stats: boolean(env, "LOADOUT_STATS", false),
          record: boolean(env, "LOADOUT_RECORD", false)
        }
        if env["LOADOUT_IGNORE_DIRECTORIES"]
          dirs = string(env, "LOADOUT_IGNORE_DIRECTORIES", "a comma-separated list of directory names or paths") || ""
          opts[:ignore_directories] = dirs.split(",").map(&:strip).reject(&:empty?)
        end
        config(opts)
      end

      # Parses a boolean variable: 1/0/true/false/yes/no (any case, blanks around ignored); unset
      # or blank is +default+.
      #: (Hash[String, String], String, bool) -> bool
      def boolean(env, name, default)
        EnvBoolean.read(env, name, default)
      end

      # The app root (see AppRoot): BUNDLE_GEMFILE's directory, else the project of the working
      # directory, else of the main script; nil when none can be found (Config says why).
      #: (Hash[String, String]) -> String?
      def app_root(env)
        AppRoot.find(env)
      end

      # Like Bootsnap: development when RAILS_ENV / RACK_ENV (first set wins) is unset, empty or
      # "development". "test" is not development: test runs boot often but rarely add files
      # mid-run, and treating it as production keeps the index trusted.
      #: (Hash[String, String]) -> bool
      def development_mode?(env)
        name = [env["RAILS_ENV"], env["RACK_ENV"]].find { |v| v && !v.empty? }
        name.nil? || name == "development"
      end

      private

      # Config.new, with a bad value reported under the variable that gave it.
      def config(opts)
        Config.new(**opts)
      rescue ConfigError => e
        variable = { cache_dir: "LOADOUT_CACHE_DIR", ignore_directories: "LOADOUT_IGNORE_DIRECTORIES" }[e.name]
        raise unless variable

        raise ConfigError.new(variable, e.value, e.accepted)
      end

      # The kinds the compile cache keeps: all unless LOADOUT_DISABLE_COMPILE_CACHE, minus each
      # kind whose own switch is on (every switch is validated, even when the whole cache is off).
      def compile_kinds(env)
        off = KIND_SWITCHES.select { |_, name| boolean(env, name, false) }.keys
        return false if boolean(env, "LOADOUT_DISABLE_COMPILE_CACHE", false)

        Config::COMPILE_KINDS - off
      end

      # A non-blank value, or nil. Bytes that are not valid in the variable's encoding are
      # refused here: every String operation after this would raise on them.
      def string(env, name, accepted)
        raw = env[name]
        return nil if raw.nil?
        return raw.strip.empty? ? nil : raw if raw.valid_encoding?

        raise ConfigError.new(name, raw, "#{accepted}, in valid #{raw.encoding} (or plain ASCII)")
      end

      # LOADOUT_TRUST: Config::TRUST_LEVELS' words ("none, stable or all"; unset is nil).
      def trust(env)
        words = Config::TRUST_LEVELS.compact.map(&:to_s)
        accepted = "#{words[0...-1].join(", ")} or #{words.last}"
        raw = string(env, "LOADOUT_TRUST", accepted) or return nil
        word = raw.strip.downcase
        return word.to_sym if words.include?(word)

        raise ConfigError.new("LOADOUT_TRUST", raw, accepted)
      end
    end
  end
end

# frozen_string_literal: true

# `require "loadout/setup"` right after `require "bundler/setup"` (Rails: config/boot.rb) turns
# loadout on with settings taken from the environment. This file is the only place that reads
# LOADOUT_* variables; README "Configuration" lists every one of them.

require_relative "../loadout"
require_relative "app_root"

module Loadout
  # Environment → Config. Values are parsed strictly: a value loadout does not understand raises
  # ConfigError naming the variable, instead of silently meaning something else.
  module Setup # :nodoc:
    TRUE_WORDS = %w[1 true yes].freeze
    FALSE_WORDS = %w[0 false no].freeze
    DEFAULT_CACHE_DIR = "tmp/cache/loadout"

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
          cache_dir: string(env, "LOADOUT_CACHE_DIR") || DEFAULT_CACHE_DIR,
          load_path_cache: !boolean(env, "LOADOUT_DISABLE_LOAD_PATH_CACHE", false),
          compile_cache: !boolean(env, "LOADOUT_DISABLE_COMPILE_CACHE", false),
          development_mode: development_mode?(env),
          readonly: boolean(env, "LOADOUT_READONLY", false),
          trust: trust(env),
          trust_shared_cache: boolean(env, "LOADOUT_TRUST_SHARED_CACHE", false),
          log: boolean(env, "LOADOUT_LOG", false),
          stats: boolean(env, "LOADOUT_STATS", false)
        }
        dirs = env["LOADOUT_IGNORE_DIRECTORIES"]
        opts[:ignore_directories] = dirs.split(",").map(&:strip).reject(&:empty?) if dirs
        Config.new(**opts)
      end

      # Parses a boolean variable: 1/0/true/false/yes/no (any case); unset or empty is +default+.
      #: (Hash[String, String], String, bool) -> bool
      def boolean(env, name, default)
        raw = env[name]
        return default if raw.nil? || raw.strip.empty?

        word = raw.strip.downcase
        return true if TRUE_WORDS.include?(word)
        return false if FALSE_WORDS.include?(word)

        raise ConfigError.new(name, raw, "1/0/true/false/yes/no")
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

      def string(env, name)
        raw = env[name]
        raw.nil? || raw.strip.empty? ? nil : raw
      end

      def trust(env)
        raw = string(env, "LOADOUT_TRUST") or return nil
        word = raw.strip.downcase
        return word.to_sym if %w[none stable all].include?(word)

        raise ConfigError.new("LOADOUT_TRUST", raw, "none, stable or all")
      end
    end

    # Requiring this file is the act of setting up. The CLI predefines @manual = true so it can
    # read the environment through this module without caching its own process.
    run unless @manual
  end
end

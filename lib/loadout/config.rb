# frozen_string_literal: true

require "rbconfig" unless defined?(::RbConfig) # never through $LOAD_PATH after setup: an app may have emptied it
require_relative "error"
require_relative "app_root"

module Loadout
  # The validated settings of one Loadout.setup call: keyword arguments in, a frozen value out.
  # Every path is expanded here (and nowhere else), so the rest of loadout only sees absolute
  # Strings. A bad option raises ConfigError naming it and the values it accepts. Without root:,
  # the root is found by AppRoot (not the working directory). When the paths cannot be made
  # absolute at all (a deleted working directory and nothing else to go by), #problem says why
  # and setup runs plain Ruby with one warning.
  #
  #   Config.new(cache_dir: "tmp/cache/loadout", root: "/app", compile_cache: [:iseq, :yaml])
  class Config
    COMPILE_KINDS = %i[iseq yaml json].freeze
    # The words of the trust: option (LOADOUT_TRUST), here only: how far stored results are used
    # without a stat (not the cache-dir rule, Trust). nil: each component's default; :none: check
    # everything; :stable: trust gem and Ruby dirs as stored; :all: trust everything (immutable
    # images only). LoadPath and CompileCache check their trust: against this list too.
    TRUST_LEVELS = [nil, :none, :stable, :all].freeze
    DEFAULT_IGNORE_DIRECTORIES = ["node_modules"].freeze

    DEFAULTS = {
      cache_dir: nil,
      root: nil,
      load_path_cache: true,
      compile_cache: true,
      development_mode: true,
      readonly: false,
      trust: nil,
      trust_shared_cache: false,
      ignore_directories: DEFAULT_IGNORE_DIRECTORIES,
      log: false,
      stats: false,
      record: false
    }.freeze
    OPTIONS = DEFAULTS.keys.freeze

    attr_reader(*OPTIONS)
    # Why this config cannot be used (the paths could not be made absolute), or nil.
    attr_reader :problem

    # Builds and freezes the settings; raises ConfigError on an unknown option or a bad value.
    #: (**untyped) -> Config
    def initialize(**options)
      unknown = options.keys - OPTIONS
      unless unknown.empty?
        name = unknown.first
        raise ConfigError.new(name, options[name], "one of the options #{OPTIONS.join(", ")} (#{name} is unknown)")
      end

      opts = DEFAULTS.merge(options)
      @problem = nil
      @root = expand_root(opts[:root])
      @cache_dir = expand_cache_dir(opts[:cache_dir])
      @load_path_cache = boolean(:load_path_cache, opts[:load_path_cache])
      @compile_cache = compile_kinds(opts[:compile_cache])
      @development_mode = boolean(:development_mode, opts[:development_mode])
      @readonly = boolean(:readonly, opts[:readonly])
      @trust = trust_level(opts[:trust])
      @trust_shared_cache = boolean(:trust_shared_cache, opts[:trust_shared_cache])
      @ignore_directories = directories(opts[:ignore_directories])
      @log = boolean(:log, opts[:log])
      @stats = boolean(:stats, opts[:stats])
      @record = boolean(:record, opts[:record])
      freeze
    end

    # Where the store file lives inside cache_dir (nil with a #problem).
    def store_path #: () -> String?
      @cache_dir && File.join(@cache_dir, "store")
    end

    # The compile cache knows two levels: nil (stat every file) and :stable (trust files outside
    # the app root). :all implies :stable; :none is its default.
    def compile_cache_trust #: () -> Symbol?
      %i[stable all].include?(@trust) ? :stable : nil
    end

    # True when at least one compile cache kind is on.
    def compile_cache? #: () -> bool
      !@compile_cache.empty?
    end

    # Directories cache keys are made relative to, most specific first: the app root, every gem
    # home, and Ruby's prefix. A cache built under the same roots elsewhere stays valid.
    def roots #: () -> Array[String]
      @roots ||= Config.roots_for(@root, defined?(Gem) ? Gem.path : [])
    end

    # The roots for an app at +root+ whose boot sees +gem_path+ (the CLI asks the app's bundle).
    def self.roots_for(root, gem_path) #: (String, Array[String]) -> Array[String]
      prefix = absolute_or_nil(RbConfig::CONFIG["prefix"])
      ([root] + gem_path.map { |d| absolute_or_nil(d) } + [prefix]).compact.uniq.freeze
    end

    # Gem and prefix directories are absolute in practice; a relative one under a deleted working
    # directory is left out rather than raised on.
    def self.absolute_or_nil(dir) #: (String) -> String?
      File.expand_path(dir)
    rescue SystemCallError
      nil
    end

    def to_h #: () -> Hash[Symbol, untyped]
      OPTIONS.to_h { |name| [name, public_send(name)] }
    end

    def ==(other)
      other.is_a?(Config) && other.to_h == to_h
    end
    alias eql? ==

    def hash
      to_h.hash
    end

    def freeze
      roots
      super
    end

    private

    def path_string(name, value)
      value = value.to_path if value.respond_to?(:to_path)
      unless value.is_a?(String) && !value.empty? && !value.include?("\0")
        raise ConfigError.new(name, value, "a non-empty path String or Pathname")
      end

      value
    end

    # File.expand_path, with what it raises on (a ~user that does not exist, ~ without a home)
    # reported as the option's error, and a path relative to a working directory that no longer
    # exists turned into nil and a #problem (loadout then stays off; the app boots plain).
    def expand(name, value, base = nil)
      File.expand_path(value, base)
    rescue ArgumentError => e
      raise ConfigError.new(name, value, "a path that expands (#{e.message}); a leading ~ means a home directory")
    rescue SystemCallError
      @problem ||= "#{value.inspect} is relative and the working directory was deleted; use absolute paths"
      nil
    end

    def expand_root(value)
      if value.nil?
        root = AppRoot.find
        @problem ||= "the app root cannot be found (the working directory was deleted); pass root:" unless root
        return root
      end

      expand(:root, path_string(:root, value))
    end

    def expand_cache_dir(value)
      if value.nil?
        raise ConfigError.new(:cache_dir, value,
                              "a directory path String or Pathname, e.g. \"tmp/cache/loadout\" (it is required)")
      end

      dir = path_string(:cache_dir, value)
      # Every key and message built from it would raise on the first Regexp or String#strip.
      return expand(:cache_dir, dir, @root) if dir.valid_encoding?

      raise ConfigError.new(:cache_dir, value, "a path whose bytes are valid #{dir.encoding}")
    end

    def boolean(name, value)
      return value if value == true || value == false

      raise ConfigError.new(name, value, "true or false")
    end

    def compile_kinds(value)
      return COMPILE_KINDS if value == true
      return [].freeze if value == false

      accepted = "true, false, or an Array of #{COMPILE_KINDS.map(&:inspect).join(", ")}"
      raise ConfigError.new(:compile_cache, value, accepted) unless value.is_a?(Array)

      kinds = value.map { |k| k.is_a?(String) ? k.to_sym : k }
      raise ConfigError.new(:compile_cache, value, accepted) unless (kinds - COMPILE_KINDS).empty?

      COMPILE_KINDS.select { |k| kinds.include?(k) }.freeze
    end

    # "nil, :none, :stable or :all": TRUST_LEVELS as an error message lists them.
    def self.trust_levels_text #: () -> String
      words = TRUST_LEVELS.map(&:inspect)
      "#{words[0...-1].join(", ")} or #{words.last}"
    end

    def trust_level(value)
      value = nil if value == false
      value = value.to_sym if value.is_a?(String)
      return value if TRUST_LEVELS.include?(value)

      raise ConfigError.new(:trust, value, "nil (the default), :none (check everything), :stable (trust gem and " \
                                           "Ruby dirs as stored) or :all (trust everything: immutable images only)")
    end

    # Names ("node_modules") are matched anywhere; entries with a "/" are paths, expanded
    # against root.
    def directories(value)
      accepted = "an Array of directory names or paths (Strings)"
      raise ConfigError.new(:ignore_directories, value, accepted) unless value.is_a?(Array)

      value.map do |dir|
        dir = dir.to_path if dir.respond_to?(:to_path)
        unless dir.is_a?(String) && !dir.empty? && !dir.include?("\0") && dir.valid_encoding?
          raise ConfigError.new(:ignore_directories, value, accepted)
        end

        (dir.include?("/") ? expand(:ignore_directories, dir, @root) : dir)&.freeze
      end.compact.uniq.freeze
    end
  end
end

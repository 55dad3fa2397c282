# frozen_string_literal: true

require_relative "error"

module Loadout
  # How every boolean LOADOUT_* variable is read: 1/0/true/false/yes/no in any case, surrounding
  # blanks ignored, unset or blank meaning the default. Here rather than in setup.rb because
  # LOADOUT_PURE is read first of all, when loadout itself is loaded. Anything else (another
  # word, bytes that are not valid in the variable's encoding) raises ConfigError naming the
  # variable, never a raw ArgumentError from a String method.
  module EnvBoolean # :nodoc:
    TRUE_WORDS = %w[1 true yes].freeze
    FALSE_WORDS = %w[0 false no].freeze
    ACCEPTED = "1/0/true/false/yes/no"

    #: (Hash[String, String], String, bool) -> bool
    def self.read(env, name, default)
      raw = env[name]
      return default if raw.nil?
      raise ConfigError.new(name, raw, ACCEPTED) unless raw.valid_encoding? && raw.ascii_only?

      word = raw.strip.downcase
      return default if word.empty?
      return true if TRUE_WORDS.include?(word)
      return false if FALSE_WORDS.include?(word)

      raise ConfigError.new(name, raw, ACCEPTED)
    end
  end

  # Picks the backend once, at load time. Every native function has a Ruby twin; callers branch
  # on BACKEND when they are defined, never per call.
  #
  # LOADOUT_PURE=1 forces the Ruby twins (CI runs the whole suite both ways). The extension is
  # also skipped off CRuby, and when it did not build or fails to load (with one warning).
  module Native
    # Returns true when LOADOUT_PURE asks for the Ruby twins; raises on a value it does not know.
    def self.pure_requested?(env = ENV) #: (Hash) -> bool
      EnvBoolean.read(env, "LOADOUT_PURE", false)
    end

    @missing = nil

    # Why CRuby runs without the extension it should have (a gem installed without a compiler,
    # a build that failed), or nil. Loadout.setup then leaves the process to plain Ruby: on the
    # Ruby twins its own setup costs more than the caches save on most apps (README, "Without
    # the extension"). LOADOUT_PURE=1 is not a missing extension: it asks for the twins.
    def self.missing #: () -> String?
      @missing
    end

    def self.load_extension #: () -> Symbol
      return :ruby if pure_requested?
      return :ruby unless RUBY_ENGINE == "ruby"

      require_relative "loadout_ext"
      :native
    rescue LoadError => e
      # A missing build is a supported configuration (gem installed without a compiler), but it
      # costs the boot caches, so say so once, with the way to get it. LOADOUT_PURE=1 silences it
      # (and loadout's own worker processes get it, so one command warns once).
      @missing = e.message
      warn "loadout: native extension unavailable (#{e.message}); Loadout.setup leaves the app to plain Ruby " \
           "(the pure-Ruby backend would boot most apps slower than that) and the rest of loadout uses that " \
           "backend. #{build_hint} (or set LOADOUT_PURE=1 to use the pure-Ruby backend everywhere, without this " \
           "warning)"
      :ruby
    end

    # How to get the extension for the copy of loadout at +root+: a source checkout (what a
    # Gemfile's `gem "loadout", path: ...` loads; Bundler builds no extension for those) is
    # built with its Rakefile, an installed gem is reinstalled where it can compile.
    def self.build_hint(root = File.expand_path("../..", __dir__)) #: (?String) -> String
      if File.file?(File.join(root, "Rakefile")) && File.file?(File.join(root, "ext", "loadout", "extconf.rb"))
        "Fix: build it with `rake compile` in #{root}, using the Ruby that runs the app " \
          "(Bundler does not build extensions of gems it loads from a path)"
      else
        "Fix: reinstall loadout where a C compiler and Ruby's headers are installed " \
          "(`gem pristine loadout`, or `bundle pristine loadout` in a bundle)"
      end
    end
  end

  BACKEND = Native.load_extension
end

# frozen_string_literal: true

require_relative "error"

module Loadout
  # Picks the backend once, at load time. Every native function has a Ruby twin; callers branch
  # on BACKEND when they are defined, never per call.
  #
  # LOADOUT_PURE=1 forces the Ruby twins (CI runs the whole suite both ways). The extension is
  # also skipped off CRuby, and when it did not build or fails to load (with one warning).
  module Native
    # Returns true when LOADOUT_PURE asks for the Ruby twins; raises on a value it does not know.
    def self.pure_requested?(env = ENV) #: (Hash) -> bool
      raw = env["LOADOUT_PURE"]
      return false if raw.nil? || raw.empty?

      case raw.downcase
      when "1", "true", "yes" then true
      when "0", "false", "no" then false
      else
        raise ConfigError.new("LOADOUT_PURE", raw, "1/0/true/false/yes/no")
      end
    end

    def self.load_extension #: () -> Symbol
      return :ruby if pure_requested?
      return :ruby unless RUBY_ENGINE == "ruby"

      require_relative "loadout_ext"
      :native
    rescue LoadError => e
      # A missing build is a supported configuration (gem installed without a compiler), but it
      # costs speed, so say so once. LOADOUT_PURE=1 silences it.
      warn "loadout: native extension unavailable (#{e.message}); using the pure-Ruby backend"
      :ruby
    end
  end

  BACKEND = Native.load_extension
end

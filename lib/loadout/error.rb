# frozen_string_literal: true

module Loadout
  # Root of every exception loadout raises on purpose. C code looks these classes up; it never
  # defines its own.
  class Error < StandardError; end

  # A bad option or environment value. The message names the option and the accepted values.
  class ConfigError < Error
    def initialize(name, value, accepted)
      @name = name
      @value = value
      @accepted = accepted
      super("#{name}: #{value.inspect} is not accepted; use #{accepted}")
    end

    attr_reader :name, :value, :accepted
  end
end

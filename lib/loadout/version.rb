# frozen_string_literal: true

module Loadout
  VERSION = "0.1.0"
end

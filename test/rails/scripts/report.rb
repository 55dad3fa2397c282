# frozen_string_literal: true

# Loaded with `load` (so it is no feature of its own) at the end of the scripts that
# `bin/rails runner` runs: writes what the process has loaded to ENV["RAILS_PROBE_OUT"] (Marshal):
# $LOADED_FEATURES, and the name of every constant reachable from Object that is defined (an
# autoload not yet triggered is left out, and nothing is loaded to find out).
module RailsProbe
  NAME = Module.instance_method(:name)
  CONSTANTS = Module.instance_method(:constants)
  AUTOLOAD_P = Module.instance_method(:autoload?)
  CONST_GET = Module.instance_method(:const_get)

  def self.constant_names
    names = []
    seen = { Object => true }.compare_by_identity
    queue = [Object]
    until queue.empty?
      mod = queue.shift
      prefix = mod.equal?(Object) ? "" : "#{NAME.bind_call(mod)}::"
      CONSTANTS.bind_call(mod, false).each do |const|
        next if AUTOLOAD_P.bind_call(mod, const)

        full = "#{prefix}#{const}"
        names << full
        value = begin
          CONST_GET.bind_call(mod, const, false)
        rescue Exception # rubocop:disable Lint/RescueException -- a constant that cannot be read is still named
          next
        end
        # Only a module's own name leads further (aliases and anonymous modules would loop).
        next unless Module === value && !seen[value] && NAME.bind_call(value) == full

        seen[value] = true
        queue << value
      end
    end
    names.sort
  end

  def self.write(path)
    features = $LOADED_FEATURES.dup
    File.binwrite(path, Marshal.dump({ features: features, constants: constant_names }))
  end
end

# RAILS_PROBE_INJECT: Ruby code run just before the report, only to prove that the comparisons
# see a difference (test/rails/harness_test.rb).
eval(ENV["RAILS_PROBE_INJECT"], TOPLEVEL_BINDING) if ENV["RAILS_PROBE_INJECT"] # rubocop:disable Security/Eval
RailsProbe.write(ENV.fetch("RAILS_PROBE_OUT"))

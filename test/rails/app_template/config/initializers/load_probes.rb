# Counts the load hooks that fire (ActiveSupport.on_load and Zeitwerk's on_load): the tests under
# test/rails print LOAD_PROBES and expect the same counts with and without loadout.
LOAD_PROBES = Hash.new(0)

%i[active_record action_controller_base action_view active_job i18n after_initialize
   active_support_test_case action_dispatch_integration_test].each do |hook|
  ActiveSupport.on_load(hook) { LOAD_PROBES["on_load:#{hook}"] += 1 }
end

Rails.autoloaders.main.on_load("Post") { LOAD_PROBES["zeitwerk:Post"] += 1 }
Rails.autoloaders.main.on_load("Payments::Charge") { LOAD_PROBES["zeitwerk:Payments::Charge"] += 1 }
Rails.autoloaders.main.on_load { |_cpath, _value, _abspath| LOAD_PROBES["zeitwerk:*"] += 1 }

# frozen_string_literal: true

# Calls and allocations of one Loadout::Store get, put and claim (counts, not times: stable on a
# busy machine). Calls are Ruby and C method calls seen by TracePoint(:call, :c_call), the call of
# the measured method itself included; allocations are GC.stat(:total_allocated_objects) with GC
# off. Each operation runs once before it is measured (method caches, lazy state).
#
#   ruby -Ilib bench/store_calls.rb                  # native backend
#   LOADOUT_PURE=1 ruby -Ilib bench/store_calls.rb   # the Ruby twins

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "loadout"
require "loadout/store"
require "tmpdir"

def measure(label, print: true)
  yield
  calls = 0
  tp = TracePoint.new(:call, :c_call) { calls += 1 }
  GC.disable
  before = GC.stat(:total_allocated_objects)
  tp.enable { yield }
  allocs = GC.stat(:total_allocated_objects) - before
  GC.enable
  printf("%-32s calls=%4d allocs=%2d\n", label, calls - 1, allocs) if print # (- 1: TracePoint#enable's block)
end

Dir.mktmpdir do |dir|
  path = File.join(dir, "store")
  Loadout::Store.open(path) { |s| 100.times { |i| s.put("key#{i}", "v" * 300) } }
  measure("", print: false) { nil } # (the first TracePoint allocates)
  s = Loadout::Store.open(path) # the map is the hint's table
  hit = "key7".b
  miss = "nope".b
  measure("get, hit from the hint table") { s.get(hit) }
  measure("get, miss") { s.get(miss) }
  value = ("x" * 200).b.freeze
  i = 0
  measure("put (appended at once)") { s.put("new#{i += 1}".b, value) }
  s.close
  deferred = Loadout::Store.open(path, defer_writes: true)
  measure("put (defer_writes)") { deferred.put("d#{i += 1}".b, value) }
  measure("get, hit after writes") { deferred.get(hit) }
  measure("claim") { deferred.claim("c#{i += 1}".b) { |_current| value } }
  deferred.close
end
puts "backend=#{Loadout::BACKEND} ruby=#{RUBY_VERSION}"

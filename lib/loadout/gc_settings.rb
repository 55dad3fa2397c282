# frozen_string_literal: true

module Loadout
  # The app's own GC settings for its boot. A warm boot is mostly Ruby's work (load_from_binary,
  # running the loaded code) and the GC's: the heap grows from Ruby's default (10,000 slots per
  # size pool) to what the app needs, running a GC at each step, and the malloc of the code being
  # loaded starts more of them (Ruby's malloc limits begin at 16 MB and only grow as GCs happen).
  # No cache can take that work away; starting the process with the heap and the limits its boot
  # ends with does. Ruby reads RUBY_GC_* only when the VM starts, so the app has to set them;
  # loadout records what each boot ends with (LastBoot's "gc." lines, see .snapshot) and
  # `loadout gc` prints the settings (.recommend). Nothing changes unless the user sets them.
  #
  # The trade: the heap is reserved at start instead of grown during boot (the process ends its
  # boot with the same heap either way), and a malloc limit that starts higher lets more garbage
  # accumulate between GCs, for the process's whole life (the default limits would grow towards
  # these values during the boot anyway).
  module GCSettings
    # Ruby's own starting point (gc.c): a setting at or below it changes nothing.
    DEFAULT_SLOTS = 10_000
    DEFAULT_MALLOC = 16 * 1024 * 1024

    class << self
      # What a boot ends with, as LastBoot records it ("gc.<name>").
      #: () -> Hash[String, Integer]
      def snapshot
        stat = GC.stat
        data = { "count" => stat[:count], "minor" => stat[:minor_gc_count], "major" => stat[:major_gc_count],
                 "allocated" => stat[:total_allocated_objects], "live_slots" => stat[:heap_live_slots],
                 "slots" => stat[:heap_available_slots], "pages" => stat[:heap_allocated_pages],
                 "malloc_limit" => stat[:malloc_increase_bytes_limit],
                 "oldmalloc_limit" => stat[:oldmalloc_increase_bytes_limit] }
        data["time_ms"] = GC.total_time / 1_000_000 if GC.respond_to?(:total_time)
        if pools?
          GC.stat_heap.each do |i, heap|
            data["pool#{i}.slots"] = heap[:heap_eden_slots]
            data["pool#{i}.slot_size"] = heap[:slot_size]
          end
        end
        data.compact
      end

      # Ruby 3.3+ sizes each slot pool on its own (RUBY_GC_HEAP_<n>_INIT_SLOTS); 4.0 reads only those.
      def pools?
        GC.respond_to?(:stat_heap) && RUBY_VERSION >= "3.3"
      end

      # The settings for a boot that ended with +gc+ (a snapshot, from LastBoot.read: "pool0.slots"
      # ...), for this Ruby: [[variable, value, what it is], ...], empty when the boot needed
      # nothing beyond Ruby's defaults.
      #: (Hash[String, Integer]) -> Array[[String, Integer, String]]
      def recommend(gc)
        out = []
        pools = gc.keys.grep(/\Apool(\d+)\.slots\z/) { Regexp.last_match(1).to_i }.sort
        if pools.any? && pools?
          pools.each do |i|
            slots = round_up(gc["pool#{i}.slots"].to_i)
            next if slots <= DEFAULT_SLOTS

            out << ["RUBY_GC_HEAP_#{i}_INIT_SLOTS", slots, "#{gc["pool#{i}.slot_size"]}-byte slots the boot ended with"]
          end
        elsif gc["slots"].to_i > DEFAULT_SLOTS && !pools?
          out << ["RUBY_GC_HEAP_INIT_SLOTS", round_up(gc["slots"].to_i), "slots the boot ended with"]
        end
        { "RUBY_GC_MALLOC_LIMIT" => "malloc_limit", "RUBY_GC_OLDMALLOC_LIMIT" => "oldmalloc_limit" }.each do |name, key|
          limit = gc[key].to_i
          next if limit <= DEFAULT_MALLOC

          out << [name, round_up(limit, 1024 * 1024), "the limit the boot's GCs grew it to"]
        end
        out
      end

      private

      def round_up(value, step = 1000)
        ((value + step - 1) / step) * step
      end
    end
  end
end

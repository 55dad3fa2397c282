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
  #
  # Ruby's malloc limit never grows past RUBY_GC_MALLOC_LIMIT_MAX (32 MiB unless set): a boot
  # whose limit ended there (or within a few GCs' 2% decay of it) was held at that cap, a GC per
  # 32 MiB malloced, for the rest of its boot. Starting it at the cap changes nothing then, so
  # such a boot gets half as much again (CAPPED_MALLOC), as the limit and as its cap (a limit
  # above the cap would fall back to the cap after the first GC that passes it). Not more: twice
  # the cap saves few more GCs and keeps far more garbage at the boot's peak
  # (bench/results/gc-settings-large-2026-11-28.md). A cap set by hand is kept. The rule is a
  # fixed point: a boot started with these settings ends with the same limit and cap, and gets
  # the same advice.
  module GCSettings
    # Ruby's own starting point (gc.c): a setting at or below it changes nothing.
    DEFAULT_SLOTS = 10_000
    DEFAULT_MALLOC = 16 * 1024 * 1024
    # Ruby's cap on the malloc limit (gc.c GC_MALLOC_LIMIT_MAX), and the limit for a boot held there.
    DEFAULT_MALLOC_MAX = 32 * 1024 * 1024
    CAPPED_MALLOC = DEFAULT_MALLOC_MAX * 3 / 2
    MIB = 1024 * 1024
    GREW = "the limit the boot's GCs grew it to" # (why, for a limit as the boot ended it)

    class << self
      # Whether these settings mean anything on +engine+: RUBY_GC_* are CRuby's (JRuby's heap is
      # the JVM's, and its GC.stat asks the JVM's management beans: tens of ms a boot).
      #: (?String) -> bool
      def applies?(engine = RUBY_ENGINE)
        engine == "ruby"
      end

      # What a boot ends with, as LastBoot records it ("gc.<name>"); nil where they do not apply.
      #: (?engine: String) -> Hash[String, Integer]?
      def snapshot(engine: RUBY_ENGINE)
        return nil unless applies?(engine)

        stat = GC.stat
        data = { "count" => stat[:count], "minor" => stat[:minor_gc_count], "major" => stat[:major_gc_count],
                 "allocated" => stat[:total_allocated_objects], "live_slots" => stat[:heap_live_slots],
                 "slots" => stat[:heap_available_slots], "pages" => stat[:heap_allocated_pages],
                 "malloc_limit" => stat[:malloc_increase_bytes_limit],
                 "oldmalloc_limit" => stat[:oldmalloc_increase_bytes_limit],
                 "malloc_limit_max" => env_size(ENV["RUBY_GC_MALLOC_LIMIT_MAX"]) } # (only when set)
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
        out.concat(malloc_settings(gc["malloc_limit"].to_i, gc["malloc_limit_max"]&.to_i))
        oldmalloc = gc["oldmalloc_limit"].to_i
        out << ["RUBY_GC_OLDMALLOC_LIMIT", round_up(oldmalloc, MIB), GREW] if oldmalloc > DEFAULT_MALLOC
        out
      end

      # The size Ruby reads from a RUBY_GC_* variable (gc.c get_envparam_size: an integer in C's
      # notation, then k, m or g), or nil when Ruby ignores it (unset, malformed, not positive).
      def env_size(value) #: (String?) -> Integer?
        m = /\A\s*([+-]?(?:0[xX]\h+|0[0-7]*|[1-9]\d*))([kKmMgG]?)\s*\z/.match(value.to_s) or return nil
        size = Integer(m[1]) * { "" => 1, "k" => 1024, "m" => MIB, "g" => 1024 * MIB }.fetch(m[2].downcase)
        size.positive? ? size : nil
      end

      private

      # The malloc limit (and cap) for a boot that ended with +limit+ under +cap+, the
      # RUBY_GC_MALLOC_LIMIT_MAX it ran with (nil: not set, Ruby's own cap).
      def malloc_settings(limit, cap)
        # (Near the cap: each GC that stays under the limit lowers it by 2%, gc.c.)
        if cap.nil? && limit >= DEFAULT_MALLOC_MAX * 9 / 10
          [["RUBY_GC_MALLOC_LIMIT", CAPPED_MALLOC,
            "the boot's limit was held at Ruby's 32 MiB cap: half as much again"],
           ["RUBY_GC_MALLOC_LIMIT_MAX", CAPPED_MALLOC, "the cap, so the limit stays there"]]
        elsif limit <= DEFAULT_MALLOC
          []
        elsif cap.nil?
          [["RUBY_GC_MALLOC_LIMIT", round_up(limit, MIB), GREW]]
        else # RUBY_GC_MALLOC_LIMIT_MAX was set (by these settings or by hand): kept as it was
          [["RUBY_GC_MALLOC_LIMIT", round_up(limit, MIB), GREW],
           ["RUBY_GC_MALLOC_LIMIT_MAX", cap, "the cap this boot ran with"]]
        end
      end

      def round_up(value, step = 1000)
        ((value + step - 1) / step) * step
      end
    end
  end
end

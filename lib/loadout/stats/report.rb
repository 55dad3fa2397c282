# frozen_string_literal: true

module Loadout
  module Stats
    # The LOADOUT_STATS report of one process, as lines: built from the counts Stats kept, so it
    # can be shown (and tested) without touching them.
    class Report # :nodoc:
      TOP = 10

      # +requires+: the require counts, or nil when requires were not timed; +baseline+: the
      # component counters at the fork, in a forked worker (its report counts its own work only).
      def initialize(pid:, parent:, forks:, setup_seconds:, off:, requires:, components:, baseline:, events:,
                     bytes:, timings:, root:)
        @pid = pid
        @parent = parent
        @forks = forks
        @setup_seconds = setup_seconds
        @off = off
        @requires = requires
        @components = components
        @baseline = baseline
        @events = events
        @bytes = bytes
        @timings = timings
        @root = root
      end

      def lines #: () -> Array[String]
        lines = ["loadout stats (#{label}, backend #{Loadout::BACKEND})"]
        setup = @setup_seconds
        lines << format("  setup:              %.2f ms", setup * 1000) if setup && !forked?
        @off.each { |name, why| lines << format("  %-19s off (%s)", "#{name}:", why) }
        if (r = @requires)
          lines << "  requires:           #{r[:calls]} calls, #{r[:loaded]} loaded, #{r[:failed]} raised"
        end
        bytes = @bytes
        since_fork(@components).each do |name, stats|
          flat, nested = stats.partition { |_, v| !v.is_a?(Hash) }
          lines << format("  %-19s %s", "#{name}:", counters(flat.to_h)) unless flat.empty?
          nested.each do |kind, sub|
            next if sub.empty? # (no fallback reasons, say: no line rather than an empty one)

            bytes += sub[:bytes_read].to_i if sub[:bytes_read].is_a?(Integer)
            lines << format("  %-19s %s", "#{kind}:", counters(sub))
          end
        end
        lines.concat(event_lines)
        lines << "  bytes read:         #{bytes}" if bytes.positive?
        lines.concat(slowest_lines)
      end

      private

      def event_lines
        by_cache = @events.group_by { |(cache, _), _| cache }
        by_cache.sort_by { |cache, _| cache.to_s }.map do |cache, pairs|
          counts = pairs.sort_by { |(_, event), _| event.to_s }.map { |(_, event), n| "#{event}=#{n}" }
          format("  %-19s %s", "#{cache} events:", counts.join(" "))
        end
      end

      def slowest_lines
        top = @timings.max_by(TOP) { |t, _| t }
        return [] if top.empty?

        root = @root
        ["  slowest requires (self time, nested requires excluded):"] + top.map do |t, feature|
          shown = root && feature.start_with?("#{root}/") ? feature.delete_prefix("#{root}/") : feature
          format("    %8.2f ms  %s", t * 1000, shown)
        end
      end

      def forked?
        Process.pid != @pid || !@parent.nil?
      end

      # "pid 12, boot" / "pid 14, worker forked from pid 12: counts since the fork" /
      # "pid 14, forked from pid 12: counts include the parent's" (a Ruby without Process._fork).
      def label
        return "pid #{Process.pid}, worker forked from pid #{@parent}: counts since the fork" if @parent
        return "pid #{Process.pid}, forked from pid #{@pid}: counts include the parent's before the fork" if forked?

        workers = @forks.positive? ? "; #{@forks} forked worker#{"s" unless @forks == 1} report separately" : ""
        "pid #{Process.pid}, boot#{workers}"
      end

      # Counters minus what they were at the fork (this process's own work only).
      def since_fork(stats, base = @baseline)
        return stats if base.nil? || base.empty?

        stats.to_h do |key, value|
          before = base[key]
          delta = if value.is_a?(Hash) then since_fork(value, before.is_a?(Hash) ? before : nil)
                  elsif value.is_a?(Numeric) && before.is_a?(Numeric) && key != :restore_ms then value - before
                  else value
                  end
          [key, delta]
        end
      end

      # "hits=825 misses=0 load_ms=148.7 reasons=mtime:3": nanosecond counters become ms, empty
      # reason tables are left out.
      def counters(stats)
        stats.filter_map do |key, value|
          if key.to_s.end_with?("_ns") && value.is_a?(Integer)
            format("%s=%.1f", key.to_s.sub(/_ns\z/, "_ms"), value / 1_000_000.0)
          elsif value.is_a?(Hash)
            "#{key}=#{value.map { |k, v| "#{k}:#{v}" }.join(",")}" unless value.empty?
          elsif value.is_a?(Float)
            format("%s=%.3f", key, value)
          else
            "#{key}=#{value}"
          end
        end.join(" ")
      end
    end
  end
end

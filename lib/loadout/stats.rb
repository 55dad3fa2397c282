# frozen_string_literal: true

require "loadout/instrumentation"

module Loadout
  # What a boot did, for people: Loadout.log! prints every event; Stats.enable! (LOADOUT_STATS=1)
  # counts events, times requires and prints a report at exit. Nothing here runs unless asked
  # for: require is only wrapped while stats are on, so the hot path is untouched otherwise.
  module Stats
    # The store key of the last boot's record (read by `loadout stats`).
    RECORD_KEY = "st/last_boot"
    TOP = 10

    # Several listeners behind the one Instrumentation subscriber slot (log + stats + the user's).
    class Fanout # :nodoc:
      attr_reader :listeners

      def initialize(listeners)
        @listeners = listeners
      end

      def call(event, path, **info)
        @listeners.each { |l| l.call(event, path, **info) }
      end
    end
    private_constant :Fanout

    # Wraps require and require_relative while stats are on, to measure each file's self time.
    module RequireTimer # :nodoc:
      private

      def require(feature)
        Stats.__time_require(feature) { super }
      end

      # Resolved here like Ruby does (relative to the caller's real path), then timed as one
      # require of the absolute path.
      def require_relative(feature)
        base = caller_locations(1, 1).first&.absolute_path
        raise LoadError, "cannot infer basepath" unless base

        require(File.expand_path(feature, File.dirname(base)))
      end
    end
    private_constant :RequireTimer

    class << self
      attr_reader :events, :requires, :timings

      # Forgets every count (tests; a process normally has one boot).
      def reset! # :nodoc:
        @events = Hash.new(0)
        @bytes = 0
        @requires = { calls: 0, loaded: 0, failed: 0 }
        @timings = []
      end

      def clock # :nodoc:
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end

      def enabled? #: () -> bool
        @enabled
      end

      # Prints every instrumentation event to +io+ (stderr by default).
      #: (?IO) -> void
      def log!(io = $stderr)
        add_listener(lambda do |event, path, **info|
          extra = info.reject { |k, _| k == :cache }.map { |k, v| "#{k}=#{v}" }.join(" ")
          io.puts "loadout: #{info[:cache] || "-"} #{event} #{path}#{" #{extra}" unless extra.empty?}"
        end)
      end

      # Starts counting events and timing requires; prints the report to +io+ at exit.
      #: (?IO) -> void
      def enable!(io = $stderr)
        return if @enabled

        @enabled = true
        add_listener(method(:count))
        Kernel.prepend(RequireTimer)
        at_exit { report(io) }
      end

      def count(event, _path, **info) # :nodoc:
        @events[[info[:cache] || :unknown, event]] += 1
        bytes = info[:bytes]
        @bytes += bytes if bytes.is_a?(Integer)
      end

      def __time_require(feature) # :nodoc:
        stack = (Thread.current[:__loadout_require_stack] ||= [])
        started = clock
        stack.push(0.0)
        ok = false
        begin
          result = yield
          ok = true
          result
        ensure
          total = clock - started
          nested = stack.pop
          stack[-1] += total unless stack.empty?
          @requires[:calls] += 1
          if !ok
            @requires[:failed] += 1
          elsif result
            @requires[:loaded] += 1
            @timings << [total - nested, feature.to_s]
          end
        end
      end

      # The stats each installed component keeps ({} for one that is off or keeps none).
      def component_stats #: () -> Hash[Symbol, Hash]
        out = {}
        { load_path: :LoadPath, compile_cache: :CompileCache }.each do |key, name|
          # Loaded components only: naming one still behind its autoload would load it now
          # (and one that failed to load at setup would fail, and warn, again).
          next unless Loadout.const_defined?(name, false) && Loadout.autoload?(name).nil?

          mod = Loadout.const_get(name)
          stats = mod.respond_to?(:stats) ? mod.stats : nil
          out[key] = stats if stats.is_a?(Hash) && !stats.empty?
        rescue ScriptError, StandardError
          next
        end
        out
      end

      # This boot's numbers, as plain data (written to the store at exit).
      def snapshot #: () -> Hash[String, untyped]
        {
          "at" => Time.now.to_i,
          "pid" => Process.pid,
          "ruby" => RUBY_DESCRIPTION,
          "backend" => Loadout::BACKEND.to_s,
          "setup_ms" => Boot.setup_seconds && (Boot.setup_seconds * 1000).round(2),
          "components" => component_stats.transform_keys(&:to_s),
          "off" => Boot.off.transform_keys(&:to_s),
          "events" => @events.map { |(cache, event), n| ["#{cache}.#{event}", n] }.to_h,
          "requires" => @enabled ? @requires.transform_keys(&:to_s) : nil
        }
      end

      # Stores this boot's snapshot under RECORD_KEY (Marshal of plain data: no library to load
      # at exit; the store is as trusted as the compiled code it holds).
      def record(store) #: (untyped) -> void
        store.put(RECORD_KEY, Marshal.dump(plain(snapshot)))
      end

      # Keeps only data Marshal round-trips without loading anything (numbers, strings,
      # symbols, booleans, nil, and Hashes/Arrays of them).
      def plain(value) # :nodoc:
        case value
        when Hash then value.each_with_object({}) { |(k, v), h| h[plain(k)] = plain(v) }
        when Array then value.map { |v| plain(v) }
        when Integer, Float, String, Symbol, true, false, nil then value
        else value.to_s
        end
      end

      # The last boot's record from +store+, or nil.
      def last_boot(store) #: (untyped) -> Hash[String, untyped]?
        raw = store.get(RECORD_KEY) or return nil
        data = Marshal.load(raw) # rubocop:disable Security/MarshalLoad -- written by Stats.record
        data.is_a?(Hash) ? data : nil
      rescue StandardError, TypeError
        nil
      end

      # Prints the LOADOUT_STATS report.
      def report(io = $stderr) #: (?IO) -> void
        io.puts report_lines.join("\n")
      rescue StandardError => e
        io.puts "loadout stats: could not build the report (#{e.class}: #{e.message})"
      end

      def report_lines #: () -> Array[String]
        lines = ["loadout stats (pid #{Process.pid}, backend #{Loadout::BACKEND})"]
        setup = Boot.setup_seconds
        lines << format("  setup:              %.2f ms", setup * 1000) if setup
        Boot.off.each { |name, why| lines << format("  %-19s off (%s)", "#{name}:", why) }
        r = @requires
        lines << "  requires:           #{r[:calls]} calls, #{r[:loaded]} loaded, #{r[:failed]} raised" if @enabled || r[:calls].positive?
        bytes = @bytes
        component_stats.each do |name, stats|
          flat, nested = stats.partition { |_, v| !v.is_a?(Hash) }
          lines << format("  %-19s %s", "#{name}:", counters(flat.to_h)) unless flat.empty?
          nested.each do |kind, sub|
            bytes += sub[:bytes_read].to_i if sub[:bytes_read].is_a?(Integer)
            lines << format("  %-19s %s", "#{kind}:", counters(sub))
          end
        end
        by_cache = @events.group_by { |(cache, _), _| cache }
        by_cache.sort_by { |cache, _| cache.to_s }.each do |cache, pairs|
          counts = pairs.sort_by { |(_, event), _| event.to_s }.map { |(_, event), n| "#{event}=#{n}" }
          lines << format("  %-19s %s", "#{cache} events:", counts.join(" "))
        end
        lines << "  bytes read:         #{bytes}" if bytes.positive?
        top = @timings.max_by(TOP) { |t, _| t }
        unless top.empty?
          root = Boot.config&.root
          lines << "  slowest requires (self time, nested requires excluded):"
          top.each do |t, feature|
            shown = root && feature.start_with?("#{root}/") ? feature.delete_prefix("#{root}/") : feature
            lines << format("    %8.2f ms  %s", t * 1000, shown)
          end
        end
        lines
      end

      private

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

      def add_listener(listener)
        current = Instrumentation.subscriber
        listeners = current.is_a?(Fanout) ? current.listeners : [current].compact
        Instrumentation.subscriber = Fanout.new(listeners + [listener])
      end
    end

    @enabled = false
    reset!
  end
end

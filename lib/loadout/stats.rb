# frozen_string_literal: true

require_relative "instrumentation"
require_relative "stats/report"

module Loadout
  # What a boot did, for people: Loadout.log! prints every event; Stats.enable! (LOADOUT_STATS=1)
  # counts events, times requires and prints a report at exit. Nothing here runs unless asked
  # for: require is only wrapped while stats are on, so the hot path is untouched otherwise.
  # (`loadout stats` reads the numbers every boot leaves beside the store: see LastBoot.)
  #
  # A process forked after setup (a parallel test worker, a preforking server's worker) runs the
  # at-exit report too: its report is labelled with its pid and its parent's, and counts only
  # what it did after the fork (Ruby 3.1+, where Process._fork can be hooked; before that its
  # counts include the parent's). The parent's report says how many workers it forked.
  module Stats
    # Hooks Process._fork while stats are on: the child starts its counts afresh.
    module ForkHook # :nodoc:
      def _fork
        pid = super
        pid.zero? ? Stats.__forked_child : Stats.__forked_parent
        pid
      end
    end
    private_constant :ForkHook

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

    # loadout's own lib dir: its files are not counted as the app's requires.
    OWN_LIB = "#{File.expand_path("..", __dir__)}/"

    # Wraps require and require_relative while stats are on, to measure each file's self time.
    # An alias chain in Kernel, like any other decorator (never a prepended module: an alias of
    # Kernel#require taken later, as Zeitwerk takes one, would capture the prepended method and
    # recurse). require_relative is resolved here like Ruby does (relative to the caller's real
    # path), then timed as one require of the absolute path.
    def self.__install_timer # :nodoc:
      ::Kernel.module_eval do
        alias_method :__loadout_untimed_require, :require

        def require(feature)
          # loadout's own files (loaded lazily, some at exit) are not the app's requires.
          own = feature.is_a?(String) && feature.start_with?(Loadout::Stats::OWN_LIB)
          return __loadout_untimed_require(feature) if own

          Loadout::Stats.__time_require(feature) { __loadout_untimed_require(feature) }
        end

        def require_relative(feature)
          base = caller_locations(1, 1).first&.absolute_path
          raise LoadError, "cannot infer basepath" unless base

          require(File.expand_path(feature, File.dirname(base)))
        end

        private :require, :require_relative, :__loadout_untimed_require
      end
    end

    class << self
      attr_reader :events, :requires, :timings

      # Forgets every count (tests; a process normally has one boot).
      def reset! # :nodoc:
        @events = Hash.new(0)
        @bytes = 0
        @requires = { calls: 0, loaded: 0, failed: 0 }
        @timings = []
        @forks = 0
        @parent = nil
        @baseline = {}
        @pid = Process.pid
      end

      # In a child just forked: this report counts from here, under a label naming the parent.
      def __forked_child # :nodoc:
        parent = @pid
        reset!
        @parent = parent
        @baseline = component_stats
      end

      def __forked_parent # :nodoc:
        @forks += 1
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

      # The setup time the report shows (Boot sets it once setup is done).
      attr_writer :setup_seconds

      # Components this Ruby asked for that stay off on this engine, with why (Boot fills it).
      attr_reader :off

      # Starts counting events and timing requires; prints the report to +io+ at exit. +root+:
      # the app root, left out of the paths the report names.
      #: (?IO, ?root: String?) -> void
      def enable!(io = $stderr, root: nil)
        return if @enabled

        @enabled = true
        @root = root
        @pid = Process.pid
        add_listener(method(:count))
        verbose = $VERBOSE
        $VERBOSE = nil # redefining require_relative warns under -w; it is meant
        __install_timer
        $VERBOSE = verbose
        Process.singleton_class.prepend(ForkHook) if Process.respond_to?(:_fork)
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
        # (Prelude: the shim's, defined before any of loadout's files when its dir is on RUBYLIB.)
        { prelude: :Prelude, load_path: :LoadPath, compile_cache: :CompileCache }.each do |key, name|
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

      # Prints the LOADOUT_STATS report.
      def report(io = $stderr) #: (?IO) -> void
        io.puts report_lines.join("\n")
      rescue StandardError => e
        io.puts "loadout stats: could not build the report (#{e.class}: #{e.message})"
      end

      def report_lines #: () -> Array[String]
        Report.new(pid: @pid, parent: @parent, forks: @forks, setup_seconds: @setup_seconds, off: @off,
                   requires: (@requires if @enabled || @requires[:calls].positive?), components: component_stats,
                   baseline: @baseline, events: @events, bytes: @bytes, timings: @timings, root: @root).lines
      end

      private

      def add_listener(listener)
        current = Instrumentation.subscriber
        listeners = current.is_a?(Fanout) ? current.listeners : [current].compact
        Instrumentation.subscriber = Fanout.new(listeners + [listener])
      end
    end

    @enabled = false
    @root = nil
    @setup_seconds = nil
    @off = {}
    reset!
  end
end

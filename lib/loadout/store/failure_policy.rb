# frozen_string_literal: true

require_relative "../error"
require_relative "../trust"

module Loadout
  class Store
    # What a store does about a problem: raise a StoreError (naming the path and the fix), or
    # with fail_safe: true carry on read-only or empty after one warning per store. Store#degrade
    # and Store#refuse change the store's state, then ask this object to raise or warn.
    class FailurePolicy # :nodoc:
      def initialize(path, fail_safe, shared)
        @path = path
        @fail_safe = fail_safe
        @shared = shared
        @warned = false
      end

      # fail_safe survives every error but a ConfigError (one warning, then read-only or empty).
      def survivable?(error)
        @fail_safe && !error.is_a?(ConfigError)
      end

      # [problem, fix] for an error met while opening, reading or writing that the store
      # survives; raises the StoreError (or +error+ itself) otherwise.
      def survive(error)
        raise self.error(error) if !@fail_safe && (error.is_a?(SystemCallError) || error.is_a?(IOError))
        raise error unless survivable?(error)

        error.is_a?(StoreError) ? [error.problem, error.fix] : Problems.describe(error, @path)
      end

      def error(error)
        StoreError.new(@path, *Problems.describe(error, @path))
      end

      # The store stopped writing (the caller made it read-only): says so, once.
      def degraded(problem, fix)
        warn_once(problem, "#{fix} (loadout continues without writing to it)")
      end

      # The store (or its hint) fails the trust rule (the caller emptied the store).
      def refused(report)
        raise StoreError.new(@path, Trust::Words.problem(report), Trust::Words.fix(report, @shared)) unless @fail_safe

        warn_once(Trust::Words.problem(report),
                  "#{Trust::Words.fix(report, @shared)} (whoever can write it can make this program run their " \
                  "code, so loadout neither reads nor writes it)")
      end

      # A write to a store that does not take writes: false with fail_safe, else raises why.
      def not_writable(closed, foreign)
        return false if @fail_safe

        raise StoreError.new(@path, "is closed", "open it again") if closed
        raise StoreError.new(@path, *Problems.foreign) if foreign

        raise StoreError.new(@path, *Problems.readonly)
      end

      # What the opened file holds: a newer format (raises, or warns), no store at all (warns with
      # fail_safe; without, the first write raises), damaged records (warns with fail_safe).
      def opened(newer, foreign, corrupt_records)
        if newer
          raise StoreVersionError.new(@path, *Problems.newer_version) unless @fail_safe

          degraded(*Problems.newer_version)
        elsif foreign
          degraded(*Problems.foreign) if @fail_safe
        elsif corrupt_records > 0 && @fail_safe
          warn_once(*Problems.corrupt(corrupt_records))
        end
      end

      def warn_once(problem, fix)
        return if @warned

        @warned = true
        warn "loadout: cache store #{Trust::Words.shown(@path)}: #{problem}; #{fix}"
      end
    end
  end
end

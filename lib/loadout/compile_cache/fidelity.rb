# frozen_string_literal: true

module Loadout
  module CompileCache
    # Decides whether a deserialised copy is indistinguishable from the value a parser returned:
    # same classes (exactly), frozenness, string bytes and encodings, hash order and key kinds,
    # instance variables, and the same sharing (an object reached twice, e.g. through a YAML
    # alias, is one object in both; distinct objects stay distinct). Objects of classes it does
    # not know are never called the same, so such values are simply not cached.
    #
    # It runs once per stored value, on the cold path, so it is written for speed: one case
    # dispatch per node, identity maps only for heap objects, and the copy's instance variables
    # are only listed when the original has some (our decoders never add any).
    module Fidelity # :nodoc:
      class << self
        def same?(original, copy) #: (untyped, untyped) -> bool
          Walk.new.same?(original, copy)
        rescue SystemStackError
          false
        end
      end

      class Walk # :nodoc:
        def initialize
          @forward = {}.compare_by_identity
          @backward = {}.compare_by_identity
        end

        def same?(a, b)
          case a
          when nil, true, false, Symbol then return a.equal?(b)
          when Integer then return b.is_a?(Integer) && a == b
          when Float then return b.is_a?(Float) && [a].pack("G") == [b].pack("G")
          end
          return false unless a.class.equal?(b.class) && a.frozen? == b.frozen?
          # A plain frozen String is compared by value: Psych's freeze: true deduplicates every
          # String with String#-@ (which equal ones end up as one object depends on the GC), and
          # Marshal's freeze: true does not keep the links it wrote for them, so no program can
          # rely on their sharing; an I18n locale (Rails' own en.yml) was never cached for it.
          if a.instance_of?(String) && a.frozen? && a.instance_variables.empty? && b.instance_variables.empty?
            return a.encoding == b.encoding && a.bytesize == b.bytesize && a == b
          end

          seen = @forward[a]
          return seen.equal?(b) && @backward[b].equal?(a) if seen
          return false if @backward.key?(b)

          @forward[a] = b
          @backward[b] = a
          return false unless a.instance_variables.empty? ? b.instance_variables.empty? : same_ivars?(a, b)

          case a
          when String then a.encoding == b.encoding && a.bytesize == b.bytesize && a == b
          when Array then a.size == b.size && a.each_index.all? { |i| same?(a[i], b[i]) }
          when Hash then same_hash?(a, b)
          when Range then a.exclude_end? == b.exclude_end? && same?(a.begin, b.begin) && same?(a.end, b.end)
          when Regexp then a.source == b.source && a.options == b.options && a.encoding == b.encoding
          when Time then a.to_r == b.to_r && a.utc_offset == b.utc_offset && a.utc? == b.utc? && a.zone == b.zone
          else same_date?(a, b)
          end
        end

        private

        def same_ivars?(a, b)
          names = a.instance_variables
          names == b.instance_variables &&
            names.all? { |n| same?(a.instance_variable_get(n), b.instance_variable_get(n)) }
        end

        def same_hash?(a, b)
          return false unless a.size == b.size && a.compare_by_identity? == b.compare_by_identity?
          return false unless a.default.nil? && b.default.nil? && a.default_proc.nil? && b.default_proc.nil?

          pairs = b.to_a # an external enumerator (each_pair.next) would switch fibers per pair
          i = -1
          a.each_pair do |k, v|
            bk, bv = pairs[i += 1]
            return false unless same?(k, bk) && same?(v, bv)
          end
          true
        end

        def same_date?(a, b)
          return false unless defined?(::Date) && a.is_a?(::Date)

          a.marshal_dump == b.marshal_dump # [nth, jd, df, sf, offset, start]: every field
        end
      end
      private_constant :Walk
    end
  end
end

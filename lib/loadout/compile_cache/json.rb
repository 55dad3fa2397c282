# frozen_string_literal: true

require "loadout/compile_cache/value_handler"

module Loadout
  module CompileCache
    # The JSON handler: JSON.load_file(path, opts) and JSON.load_file!(path, opts), cached per
    # option set. Options that make the parser build objects of caller-chosen classes
    # (create_additions, object_class, array_class, decimal_class, match_string) or values that
    # are not plain data go straight to JSON, counted as :skipped with reason :option.
    module JSON # :nodoc:
      LETTER = "j"
      UNCACHEABLE = %i[create_additions object_class array_class decimal_class match_string].freeze
      PLAIN = [NilClass, TrueClass, FalseClass, Integer, Float, Symbol, String].freeze
      LIBRARY = :JSON
      KIND = :json

      # Prepended to JSON's singleton class.
      module Hook
        extend ValueHandler::Preload

        def load_file(filespec, opts = {})
          JSON.fetch(:load_file, filespec, opts) { super }
        end

        def load_file!(filespec, opts = {})
          JSON.fetch(:load_file!, filespec, opts) { super }
        end
      end

      @ctx = nil
      extend ValueHandler

      class << self
        private

        # The Call for options of immediate values is remembered (see Values.memo); the key is a
        # new Array, never the caller's Hash, which the caller may change later.
        def memoized_call(method, opts)
          # load_file treats nil as no options; load_file! merges it and raises, so that call is
          # left to JSON.
          opts = {} if opts.nil? && method == :load_file
          return :option unless opts.is_a?(Hash)

          external = Encoding.default_external
          internal = Encoding.default_internal
          memo_key = nil
          if opts.each_value.all? { |v| ValueHandler::IMMEDIATES.include?(v.class) }
            memo_key = [method, external, internal]
            opts.each { |name, value| memo_key << name << value }
          end
          Values.memo(@calls, memo_key) { call_for(method, opts, external, internal) } || :option
        end

        def call_for(method, opts, external, internal)
          options = [::JSON::VERSION, ::JSON::Parser.name, method, external.name, internal&.name]
          opts.each do |name, value|
            return nil unless name.is_a?(Symbol) && !UNCACHEABLE.include?(name) && PLAIN.include?(value.class)

            options << [name, value]
          end
          Values::Call.new(:json, LETTER, options.sort_by(&:to_s).inspect, opts[:freeze] ? true : false,
                           Values::NO_FALLBACK)
        end
      end
    end
  end
end

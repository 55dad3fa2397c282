# frozen_string_literal: true

require_relative "value_handler"

module Loadout
  module CompileCache
    # The JSON handler: JSON.load_file and JSON.load_file!, cached per option set. Options that
    # make the parser build objects of caller-chosen classes (create_additions, object_class,
    # array_class, decimal_class, match_string) or values that are not plain data go straight to
    # JSON, counted as :skipped with reason :option.
    #
    # The hooks take any arguments and pass exactly those on (a positional Hash stays positional,
    # keywords stay keywords), because the json gems differ: up to 2.x the methods are
    # (filespec, opts = {} or nil), from 3.0 (filespec, **options). What the library will see as
    # its options is worked out from its own signature (Signature); a call shape it would reject
    # (a positional Hash for 3.x) or a signature not known here goes to it uncached, so it raises
    # exactly its own error.
    module JSON # :nodoc:
      LETTER = "j"
      UNCACHEABLE = %i[create_additions object_class array_class decimal_class match_string].freeze
      PLAIN = [NilClass, TrueClass, FalseClass, Integer, Float, Symbol, String].freeze
      LIBRARY = :JSON
      KIND = :json
      # What a (filespec, opts = default) method gets when the caller passes no options: its own
      # default (which differs between versions), kept apart from an explicit {} or nil.
      DEFAULT = :default

      # Prepended to JSON's singleton class.
      module Hook
        extend ValueHandler::Preload

        def load_file(*args, **kwargs, &block)
          JSON.fetch(:load_file, args.first, [args, kwargs]) { super(*args, **kwargs, &block) }
        end

        def load_file!(*args, **kwargs, &block)
          JSON.fetch(:load_file!, args.first, [args, kwargs]) { super(*args, **kwargs, &block) }
        end
      end

      @ctx = nil
      @signatures = {}
      extend ValueHandler

      class << self
        # :positional for (filespec, opts = ...), :keywords for (filespec, **options), nil for
        # anything else: what the method under the hook (the library's, or a decorator's)
        # declares. Read once per method.
        def signature(method) #: (Symbol) -> Symbol?
          return @signatures[method] if @signatures.key?(method)

          target = ::JSON.method(method)
          target = target.super_method while target && target.owner.equal?(Hook)
          @signatures[method] = case target&.parameters&.map(&:first)
                                when %i[req opt] then :positional
                                when %i[req keyrest] then :keywords
                                end
        end

        # The options the library would parse with for +args+ and +kwargs+ (a Hash, nil or
        # DEFAULT), or the Symbol reason the call is left to it.
        def effective_options(method, args, kwargs)
          case signature(method)
          when :positional
            # Ruby hands keywords to a method without keyword parameters as one positional Hash.
            return kwargs.empty? ? DEFAULT : kwargs if args.size == 1
            return :arguments unless args.size == 2 && kwargs.empty?

            opts = args[1]
            opts.nil? || opts.is_a?(Hash) ? opts : :option
          when :keywords
            args.size == 1 ? kwargs : :arguments
          else
            :signature
          end
        end

        private

        # The Call for options of immediate values is remembered (see Values.memo); the key is a
        # new Array, never the caller's Hash, which the caller may change later.
        def memoized_call(method, (args, kwargs))
          opts = effective_options(method, args, kwargs)
          return opts if opts.is_a?(Symbol) && opts != DEFAULT
          return :warnings if parse_may_warn?

          external = Encoding.default_external
          internal = Encoding.default_internal
          memo_key = nil
          if !opts.is_a?(Hash) || opts.each_value.all? { |v| ValueHandler::IMMEDIATES.include?(v.class) }
            memo_key = [method, external, internal, opts.class]
            opts&.each { |name, value| memo_key << name << value } if opts.is_a?(Hash)
          end
          Values.memo(@calls, memo_key) { call_for(method, opts, external, internal) } || :option
        end

        def call_for(method, opts, external, internal)
          shape = opts.is_a?(Hash) ? "hash" : opts.inspect
          options = [::JSON::VERSION, ::JSON::Parser.name, method, *io_encodings(external, internal), shape]
          (opts.is_a?(Hash) ? opts : {}).each do |name, value|
            return nil unless name.is_a?(Symbol) && !UNCACHEABLE.include?(name) && PLAIN.include?(value.class)

            options << [name, value]
          end
          freeze = opts.is_a?(Hash) && opts[:freeze] ? true : false
          shape = [:json, method, opts.is_a?(Hash) ? opts.to_h { |k, v| [k, v] } : opts, external.name, internal&.name]
          Values::Call.new(:json, LETTER, options.sort_by(&:to_s).inspect, freeze, Values::NO_FALLBACK, nil, nil, nil,
                           shape)
        end

        # json 2.13 to 2.x warns (category :deprecated) about duplicate keys and comments while it
        # parses; a hit would not. Only while such warnings would be shown is the call left to it.
        def parse_may_warn?
          !$VERBOSE.nil? && Warning[:deprecated] && ::JSON.respond_to?(:deprecation_warning, true)
        end

        # The encodings the library's File.read depends on, by name. An internal encoding equal to
        # a UTF-8 external one converts nothing, so UTF-8/UTF-8 (Rails) and UTF-8/none (a CLI in
        # a UTF-8 locale) are one variant.
        def io_encodings(external, internal)
          internal = nil if internal == external && external == Encoding::UTF_8
          [external.name, internal&.name]
        end
      end
    end
  end
end

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
    class JSONHandler < ValueHandler # :nodoc:
      LETTER = "j"
      UNCACHEABLE = %i[create_additions object_class array_class decimal_class match_string].freeze
      PLAIN = [NilClass, TrueClass, FalseClass, Integer, Float, Symbol, String].freeze
      LIBRARY = :JSON
      KIND = :json
      # What a (filespec, opts = default) method gets when the caller passes no options: its own
      # default (which differs between versions), kept apart from an explicit {} or nil.
      DEFAULT = :default

      # Prepended to JSON's singleton class; passes straight through when no handler is installed.
      module LoadFileHook
        extend ValueHandler::Preload

        def load_file(*args, **kwargs, &block)
          handler = CompileCache.json_handler or return super
          handler.fetch(:load_file, args.first, [args, kwargs]) { super(*args, **kwargs, &block) }
        end

        def load_file!(*args, **kwargs, &block)
          handler = CompileCache.json_handler or return super
          handler.fetch(:load_file!, args.first, [args, kwargs]) { super(*args, **kwargs, &block) }
        end
      end
      HOOK = LoadFileHook

      @signatures = {}

      class << self
        # :positional for (filespec, opts = ...), :keywords for (filespec, **options), nil for
        # anything else: what the method under the hook (the library's, or a decorator's)
        # declares. Read once per method.
        def signature(method) #: (Symbol) -> Symbol?
          return @signatures[method] if @signatures.key?(method)

          target = JSON.method(method)
          target = target.super_method while target && target.owner.equal?(LoadFileHook)
          @signatures[method] = case target&.parameters&.map(&:first)
                                when %i[req opt] then :positional
                                when %i[req keyrest] then :keywords
                                end
        end

        # The options the library would parse with for +args+ (the path first) and +kwargs+ (a
        # Hash, nil or DEFAULT), or the Symbol reason the call is left to it.
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

        # The Call of a call with +args+ (the path first) and +kwargs+ under the encodings
        # +external+ and +internal+, built the way a call through the hook builds it (the one
        # function both use): what precompile's replay stores under and check looks under
        # (ValueCalls). A Symbol when the call is left to the library.
        #: (Symbol, Array[untyped], Hash[Symbol, untyped], Encoding, Encoding?) -> (ValueHandler::Call | Symbol)
        def call_of(method, args, kwargs, external, internal)
          opts = effective_options(method, args, kwargs)
          return opts if opts.is_a?(Symbol) && opts != DEFAULT

          call_for(method, opts, args, kwargs, external, internal) || :option
        end

        # A Call for the effective options +opts+, nil when an option cannot be cached.
        def call_for(method, opts, args, kwargs, external, internal)
          shape = opts.is_a?(Hash) ? "hash" : opts.inspect
          options = [JSON::VERSION, JSON::Parser.name, method, *io_encodings(external, internal), shape]
          (opts.is_a?(Hash) ? opts : {}).each do |name, value|
            return nil unless name.is_a?(Symbol) && !UNCACHEABLE.include?(name) && PLAIN.include?(value.class)

            options << [name, value]
          end
          options = options.sort_by(&:to_s).inspect
          freeze = opts.is_a?(Hash) && opts[:freeze] ? true : false
          shape = ValueCalls.shape(:json, method, args.drop(1), kwargs, external.name, internal&.name, options)
          ValueHandler::Call.new(options, freeze, ValueHandler::NO_FALLBACK, nil, nil, nil, shape)
        end

        private

        # The encodings the library's File.read depends on, by name. An internal encoding equal to
        # a UTF-8 external one converts nothing, so UTF-8/UTF-8 (Rails) and UTF-8/none (a CLI in
        # a UTF-8 locale) are one variant.
        def io_encodings(external, internal)
          internal = nil if internal == external && external == Encoding::UTF_8
          [external.name, internal&.name]
        end
      end

      private

      # The Call for options of immediate values is remembered (see #memo); the key is a new
      # Array, never the caller's Hash, which the caller may change later.
      def memoized_call(method, (args, kwargs))
        opts = self.class.effective_options(method, args, kwargs)
        return opts if opts.is_a?(Symbol) && opts != DEFAULT
        return :warnings if parse_may_warn?

        external = Encoding.default_external
        internal = Encoding.default_internal
        memo_key = nil
        if !opts.is_a?(Hash) || opts.each_value.all? { |v| IMMEDIATES.include?(v.class) }
          memo_key = [method, external, internal, opts.class]
          opts&.each { |name, value| memo_key << name << value } if opts.is_a?(Hash)
        end
        memo(memo_key) { self.class.call_for(method, opts, args, kwargs, external, internal) } || :option
      end

      # json 2.13 to 2.x warns (category :deprecated) about duplicate keys and comments while it
      # parses; a hit would not. Only while such warnings would be shown is the call left to it.
      def parse_may_warn?
        !$VERBOSE.nil? && Warning[:deprecated] && JSON.respond_to?(:deprecation_warning, true)
      end

      # JSON.parse builds a new object for every node: nothing in its result is reached twice.
      def tree?
        true
      end
    end
  end
end

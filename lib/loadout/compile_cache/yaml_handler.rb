# frozen_string_literal: true

require_relative "value_handler"
require_relative "yaml_tags"

module Loadout
  module CompileCache
    # The YAML handler: Psych.load_file, safe_load_file and unsafe_load_file (YAML is Psych),
    # with every keyword they take. The method and its keywords are part of the key, so a
    # safe_load_file never sees what an unsafe_load_file stored. A call this handler cannot
    # reproduce exactly goes straight to Psych and is counted as :skipped with its reason:
    # an unknown keyword, a permitted class that is not a named Class/Module or String, or an
    # unusual Encoding.default_internal. While custom tags are registered (Psych.load_tags, which
    # Rails fills, or add_domain_type) only files without any tag are served and stored (see
    # YAMLTags); a file with one is left to Psych (:skipped, reason :custom_tags).
    class YAMLHandler < ValueHandler # :nodoc:
      LETTER = "y"
      KEYWORDS = {
        load_file: %i[permitted_classes permitted_symbols aliases filename fallback symbolize_names freeze],
        safe_load_file: %i[permitted_classes permitted_symbols aliases filename fallback symbolize_names freeze],
        unsafe_load_file: %i[filename fallback symbolize_names freeze]
      }.freeze
      LIBRARY = :Psych
      KIND = :yaml
      # A document where none of these can occur has no anchors, aliases (so no shared objects),
      # tags (so no custom classes or binary strings) or merge keys: whatever Psych builds from it
      # that MessagePack can pack (Hash, Array, UTF-8 String, Integer, Float, Symbol, nil, true,
      # false) comes back exactly, so its round trip needs no check. Anchors, aliases and tags
      # follow whitespace, a flow indicator or a line start; matching more (a quoted "a & b")
      # only costs the check.
      PLAIN_SOURCE = /(?:\A|[\s\[\]{},:\-?])[&*!]|<</.freeze

      # Prepended to Psych's singleton class; passes straight through when no handler is installed.
      module PsychHook
        extend ValueHandler::Preload

        def load_file(filename, **kwargs)
          (handler = CompileCache.yaml_handler) ? handler.fetch(:load_file, filename, kwargs) { super } : super
        end

        def safe_load_file(filename, **kwargs)
          (handler = CompileCache.yaml_handler) ? handler.fetch(:safe_load_file, filename, kwargs) { super } : super
        end

        def unsafe_load_file(filename, **kwargs)
          (handler = CompileCache.yaml_handler) ? handler.fetch(:unsafe_load_file, filename, kwargs) { super } : super
        end
      end
      HOOK = PsychHook

      # The Call for +method+ with +kwargs+ (the keywords of a recorded call), built the way a
      # call through the hook builds it: what precompile's replay stores under and check looks
      # under (ValueCalls).
      def self.call_of(method, kwargs) #: (Symbol, Hash[Symbol, untyped]) -> (ValueHandler::Call | Symbol)
        call_for(method, kwargs)
      end

      # A Call for these keywords, or the Symbol reason they cannot be cached.
      def self.call_for(method, kwargs)
        options = [Psych::VERSION, method]
        fallback = NO_FALLBACK
        replay = {} # the keywords as plain data (ValueCalls)
        kwargs.each do |name, value|
          return :option unless KEYWORDS.fetch(method, []).include?(name)

          case name
          when :permitted_classes
            return :option unless value.is_a?(Array)

            names = value.map { |c| c.is_a?(Module) ? c.name : c }
            return :option unless names.all?(String)

            options << [name, names.sort]
            replay[name] = names.sort
          when :permitted_symbols
            return :option unless value.is_a?(Array) && value.all? { |s| s.is_a?(Symbol) || s.is_a?(String) }

            options << [name, value.map(&:to_s).sort]
            replay[name] = value.map(&:to_s).sort
          when :filename
            nil # only used in error messages, which are never cached
          when :fallback
            if IMMEDIATES.include?(value.class)
              options << [name, value]
              replay[name] = value
            else
              options << [name, :object]
              fallback = value
              replay = nil
            end
          else
            options << [name, value ? true : false]
            replay[name] = value ? true : false
          end
        end
        options = options.inspect
        Call.new(options, kwargs[:freeze] ? true : false, fallback, PLAIN_SOURCE, nil, :record,
                 replay && ValueCalls.shape(:yaml, method, [], replay, nil, nil, options))
      end

      private

      # Psych's global tag tables and Encoding.default_internal are checked on every call; the
      # rest of the Call depends only on the method and its keywords, remembered when they are
      # all plain values (true/false, nil, Symbols, Integers).
      def memoized_call(method, kwargs)
        tags = YAMLTags.tables
        return :custom_tags if tags == :unusable

        internal = Encoding.default_internal
        return :default_internal unless internal.nil? || internal == Encoding::UTF_8

        plain = kwargs.empty? || kwargs.each_value.all? { |v| IMMEDIATES.include?(v.class) }
        memo(plain ? [method, kwargs, tags] : nil) do
          call = self.class.call_for(method, kwargs)
          call.tags = :require if tags == :active && call.is_a?(Call)
          call
        end
      end
    end
  end
end

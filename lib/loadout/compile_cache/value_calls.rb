# frozen_string_literal: true

module Loadout
  module CompileCache
    # Which YAML and JSON calls an app makes, so `loadout precompile` fills the entries its boot
    # looks up and `loadout check` looks where the boot will. A YAML/JSON entry's variant depends
    # on the library's version, the method, its options and, for JSON, the process's
    # Encoding.default_external and default_internal (Rails sets both to UTF-8; a CLI in a UTF-8
    # locale has UTF-8 and none, the same variant): things only the app's process knows.
    #
    # A shape is plain data: [kind, method, args, kwargs, external, internal, options], the call
    # as the app made it (args after the path, and keywords: a json 2.x positional Hash and a
    # json 3.x keyword Hash are different calls) under its encodings, and the option string its
    # variant was made of (nil for the common shapes below, which were never seen). From a
    # shape, the one function the hook itself uses (YAMLHandler.call_of, JSONHandler.call_of)
    # gives the variant, so the shape a boot uses, the one precompile stores under and the one
    # check looks under cannot differ.
    #
    # Each boot that writes to the cache merges the shapes it used into the store's
    # "st/value_calls" record; precompile replays the recorded shapes and the common ones
    # (DEFAULTS: YAML.load_file, unsafe_load_file, I18n's unsafe_load_file(symbolize_names: true,
    # freeze: true), JSON.load_file, under UTF-8 and under the CLI's own encodings) through the
    # hooks. check looks under the recorded shapes' own variants (those are what the app's boots
    # asked for, whatever library the CLI has loaded), and under the common ones only when no
    # boot has recorded any. The record also says whether the app had custom Psych tags
    # registered (Rails does), which decides what check says of tagged files.
    module ValueCalls # :nodoc:
      RECORD_KEY = "st/value_calls"
      FORMAT = 2
      LIMIT = 32 # shapes kept in the record, most recent first
      YAML_DEFAULTS = [[:yaml, :load_file, [], {}, nil, nil, nil], [:yaml, :unsafe_load_file, [], {}, nil, nil, nil],
                       [:yaml, :unsafe_load_file, [], { symbolize_names: true, freeze: true }, nil, nil, nil]].freeze
      PLAIN = [NilClass, TrueClass, FalseClass, Integer, Float, Symbol, String].freeze

      @used = {}
      @noted = {}.compare_by_identity
      @custom_tags = false

      class << self
        # Forgets the calls noted so far (a new installation).
        def reset! #: () -> void
          @used = {}
          @noted = {}.compare_by_identity
          @custom_tags = false
        end

        # A shape (see above) as frozen plain data; nil when the call holds anything else.
        #: (Symbol, Symbol, Array[untyped], Hash[Symbol, untyped], String?, String?, String?) -> Array[untyped]?
        def shape(kind, method, args, kwargs, external, internal, options)
          return nil unless plain?(args) && plain?(kwargs)

          # A copy: the caller may change its Hash after the call.
          args, kwargs = Marshal.load(Marshal.dump([args, kwargs])) # rubocop:disable Security/MarshalLoad
          [kind, method, args, kwargs, external, internal, options].freeze
        end

        # Remembers the shape of +call+ (a ValueHandler::Call), once per Call object.
        def note(call) #: (untyped) -> void
          return if @noted.key?(call)

          @noted[call] = true
          @used[call.shape] = true if call.shape
          @custom_tags = true if call.tags == :require
        end

        # At a boot's exit: merges this process's shapes into the record (written only when it
        # adds something).
        def record(store) #: (untyped) -> void
          return if @used.empty? && !@custom_tags

          old = recorded(store)
          shapes = (@used.keys + old[:shapes]).uniq.first(LIMIT)
          custom = @custom_tags || old[:custom_tags]
          return if shapes.sort_by(&:inspect) == old[:shapes].sort_by(&:inspect) && custom == old[:custom_tags]

          store.put(RECORD_KEY, Marshal.dump({ "format" => FORMAT, "shapes" => shapes, "custom_tags" => custom }))
        end

        # { shapes: [...], custom_tags: bool } from the store's record (empty when there is none).
        def recorded(store)
          raw = store.get(RECORD_KEY)
          data = raw && Marshal.load(raw) # rubocop:disable Security/MarshalLoad -- written by #record
          unless data.is_a?(Hash) && data["format"] == FORMAT && data["shapes"].is_a?(Array)
            return { shapes: [], custom_tags: false }
          end

          { shapes: data["shapes"].select { |s| valid?(s) }, custom_tags: data["custom_tags"] == true }
        rescue StandardError, TypeError
          { shapes: [], custom_tags: false }
        end

        # The shapes of +kind+ precompile fills: the recorded ones, then the common ones.
        def shapes(store, kind) #: (untyped, Symbol) -> Array[Array[untyped]]
          (recorded(store)[:shapes] + defaults).select { |s| s[0] == kind }.uniq
        end

        # The shapes of +kind+ check expects a boot to use: the recorded ones, else the common ones.
        def expected(store, kind) #: (untyped, Symbol) -> Array[Array[untyped]]
          shapes = recorded(store)[:shapes].select { |s| s[0] == kind }
          shapes.empty? ? defaults.select { |s| s[0] == kind } : shapes
        end

        def defaults
          own = [Encoding.default_external.name, Encoding.default_internal&.name]
          json = [["UTF-8", nil], own].uniq.map { |ext, int| [:json, :load_file, [], {}, ext, int, nil] }
          YAML_DEFAULTS + json
        end

        # Loads +path+ with each shape through the installed hooks (which store what they parse).
        # Raises the last shape's error when no shape could load the file.
        def precompile(path, shapes) #: (String, Array[Array[untyped]]) -> void
          error = nil
          loaded = shapes.count do |shape|
            replay(path, shape)
            true
          rescue StandardError, ScriptError => e
            error = e
            false
          end
          raise error if loaded.zero? && error
        end

        # The variants a boot looks +kind+ files up under, one per shape: the one it recorded,
        # else the one the hook would make of the shape in this process.
        def variants(key, kind, shapes) #: (Key, Symbol, Array[Array[untyped]]) -> Array[String]
          shapes.filter_map do |shape|
            options = shape[6] || options_of(shape)
            key.variant(kind, options) if options
          end.uniq
        end

        private

        def valid?(shape)
          shape.is_a?(Array) && shape.size == 7 && %i[yaml json].include?(shape[0]) && shape[1].is_a?(Symbol) &&
            shape[2].is_a?(Array) && shape[3].is_a?(Hash)
        end

        # Whether +value+ is plain data: Hashes and Arrays of plain values.
        def plain?(value)
          case value
          when Hash then value.all? { |k, v| plain?(k) && plain?(v) }
          when Array then value.all? { |v| plain?(v) }
          else PLAIN.include?(value.class)
          end
        end

        # The option string the hook would make of +shape+ here.
        def options_of((kind, method, args, kwargs, ext, int))
          call = if kind == :yaml
                   require "yaml"
                   YAMLHandler.call_of(method, kwargs)
                 else
                   require "json"
                   JSONHandler.call_of(method, ["", *args], kwargs, Encoding.find(ext), int && Encoding.find(int))
                 end
          call.options if call.is_a?(ValueHandler::Call)
        rescue StandardError
          nil
        end

        def replay(path, (kind, method, args, kwargs, ext, int))
          with_encodings(ext, int) do
            if kind == :yaml
              Psych.public_send(method, path, **kwargs) if Psych.respond_to?(method)
            else
              JSON.public_send(method, path, *args, **kwargs)
            end
          end
        end

        # Runs the block with the shape's encodings. YAML's have none (its variant does not depend
        # on them): the CLI's external encoding is kept, and no internal one, which YAML needs.
        def with_encodings(ext, int)
          saved = [Encoding.default_external, Encoding.default_internal]
          set_encodings(ext || saved[0], int)
          yield
        ensure
          set_encodings(*saved) if saved
        end

        def set_encodings(ext, int)
          verbose = $VERBOSE
          $VERBOSE = nil # "setting Encoding.default_internal" is a warning under -w
          Encoding.default_external = ext
          Encoding.default_internal = int
        ensure
          $VERBOSE = verbose
        end
      end
    end
  end
end

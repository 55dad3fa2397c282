# frozen_string_literal: true

module Loadout
  module CompileCache
    # Whether Psych's global tag tables can change what a YAML file loads as.
    #
    # Psych.load_tags (Rails fills it: ActiveSupport::TimeWithZone, ActionController::Parameters,
    # ActiveRecord) and Psych.domain_types are consulted by Psych::Visitors::ToRuby for tagged
    # nodes only: `@load_tags[o.tag]` (o.tag is nil for a node without a tag) and, for
    # domain_types, only `unless !target.tag` (psych 4.0 and 5.x alike). So a document in which
    # no node has a tag loads the same whatever those tables hold, as long as load_tags answers
    # nil for nil (no default, no nil key): such a file is cached under Rails too. A file with a
    # tag is left to Psych while custom tags are registered.
    #
    # A source is tag-free when:
    # - no "!" can start a token. Every tag starts with "!" ("!x", "!!x", "!<...>", "!"), and in
    #   every encoding Psych reads (UTF-8, UTF-16, UTF-32) a "!" contains the byte 0x21. A "!"
    #   right after an ASCII letter or digit never starts a token in libyaml: it continues the
    #   plain scalar, tag, comment or quoted scalar it is in, and after an anchor, alias,
    #   directive or version number it is a scan error (nothing loads, nothing is cached). Any
    #   other "!" (at the start, after a space, a quote, a flow indicator, a multi-byte
    #   character...) is a candidate, and then:
    # - libyaml itself, parsing the same bytes into events (no objects built), reports no tag.
    #   Sources that start with a UTF-16/32 byte order mark are never called tag-free (Ruby and
    #   libyaml would detect those differently); a parse error is not tag-free either.
    module YAMLTags # :nodoc:
      CANDIDATE = /(?:\A|[^A-Za-z0-9])!/n.freeze
      WIDE_BOMS = ["\xFE\xFF".b, "\xFF\xFE".b, "\x00\x00\xFE\xFF".b].freeze

      Found = Class.new(StandardError)

      @finder = nil # FINDER's class, made on first use

      # Stops the event parse at the first tagged node. Built on first use: Psych::Handler
      # exists only once the app has loaded Psych, and this file may load before.
      FINDER = lambda do
        Class.new(Psych::Handler) do
          def scalar(_value, _anchor, tag, *)
            raise Found if tag
          end

          def start_sequence(_anchor, tag, *)
            raise Found if tag
          end

          def start_mapping(_anchor, tag, *)
            raise Found if tag
          end
        end
      end

      class << self
        # :none (no custom tags), :active (some, and tag-free files are safe to serve), or
        # :unusable (a load_tags that answers for untagged nodes too: nothing is cached).
        def tables #: () -> Symbol
          load_tags = Psych.load_tags
          return :unusable unless load_tags.is_a?(Hash)
          return :unusable if load_tags.default || load_tags.default_proc || load_tags.key?(nil)
          return :none if load_tags.empty? && Psych.domain_types.empty?

          :active
        end

        # True when no node of +source+ (the file's bytes) can carry a tag.
        def tag_free?(source) #: (String) -> bool
          source = source.b
          return true unless source.match?(CANDIDATE)
          return false if WIDE_BOMS.any? { |bom| source.start_with?(bom) }

          @finder ||= FINDER.call
          Psych::Parser.new(@finder.new).parse(source.force_encoding(Encoding::UTF_8))
          true
        rescue StandardError # Found, a syntax error, anything: not proven tag-free
          false
        end
      end
    end
  end
end

# frozen_string_literal: true

require "rbconfig"

module Loadout
  module LoadPath
    # Parses the argument of require/load the way load.c's search_required does, and answers
    # only when the answer can be proven: anything odd is a fallback to Ruby's own require.
    module Feature # :nodoc:
      DLEXT = ".#{RbConfig::CONFIG["DLEXT"]}"
      # What a parsed feature asks for: RB_THEN_SO ("x": x.rb then x.so in each entry),
      # RB ("x.rb"), SO ("x.so": Ruby maps it to DLEXT).
      RB_THEN_SO = [".rb", DLEXT].freeze
      RB = [".rb"].freeze
      SO = [DLEXT].freeze
      # Ruby does not search for these: absolute, ./ ../ and ~ paths go straight to the file.
      DIRECT = :direct
      # #parse runs on every require; it reads these ivars, not the constants (Ruby 3.1 drops
      # every constant cache whenever a class is defined, about once per required file).
      @rb = RB
      @so = SO
      @rb_then_so = RB_THEN_SO
      @dlext = DLEXT

      class << self
        # Returns [stem, exts] to look up, DIRECT, or a Symbol reason to fall back.
        #: (untyped) -> ([String, Array[String]] | Symbol)
        def parse(feature)
          return :not_string unless feature.instance_of?(String)
          return :empty if feature.empty?

          first = feature.getbyte(0)
          # "/" absolute, "~" home, "./" and "../" explicit relative (file.c is_explicit_relative).
          return :direct if first == 47 || first == 126 # DIRECT
          return :direct if first == 46 && (feature.start_with?("./", "../") || feature == "." || feature == "..")
          return :encoding unless sane_encoding?(feature)
          return :control_char if feature.include?("\0") || feature.include?("\n")
          return :dot_segment if feature.include?("//") || feature.end_with?("/") ||
                                 feature.include?("/./") || feature.include?("/../") ||
                                 feature.end_with?("/.") || feature.end_with?("/..")

          dot = feature.rindex(".")
          if dot && !feature.index("/", dot)
            return [feature[0, dot], @rb] if feature.end_with?(".rb") && feature.length - dot == 3
            return [feature[0, dot], @so] if feature.end_with?(@dlext, ".so") && !feature.index(".", dot + 1)
            # ".o" maps to DLEXT and other dynamic-library names differ per platform: let Ruby do it.
            return :extension if feature.end_with?(".o", ".bundle", ".dll") && !feature.index(".", dot + 1)
          end
          # No extension, or one Ruby does not know ("x.rake", "foo.bar"): Ruby appends .rb / DLEXT.
          [feature, @rb_then_so]
        end

        # A literal relative path for load(): nil unless it is a plain relative name the index
        # holds (.rb or DLEXT); load never appends an extension.
        #: (untyped) -> [String, Array[String]]?
        def parse_exact(file)
          parsed = parse(file)
          return nil unless parsed.is_a?(Array)
          return nil if parsed[1].equal?(RB_THEN_SO)

          parsed
        end

        private

        def sane_encoding?(str)
          return true if str.ascii_only?

          enc = str.encoding
          (enc == Encoding::UTF_8 || enc == Encoding::US_ASCII) && str.valid_encoding?
        end
      end
    end
  end
end

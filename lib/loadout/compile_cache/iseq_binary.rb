# frozen_string_literal: true

require_relative "../native"

module Loadout
  module CompileCache
    # Rewrites string objects inside a CRuby 3.x instruction-sequence binary (the "IBF" format
    # RubyVM::InstructionSequence#to_binary writes), for two reasons:
    #
    # 1. Labels. compile_file names the top-level iseq "<main>"; Ruby's own require names it
    #    "<top (required)>" (and its blocks "block in <top (required)>"). Backtraces and
    #    caller_locations show the label, so the cached binary gets Ruby's names.
    # 2. Relocation. The binary embeds the absolute path it was compiled at (the iseq's path
    #    and realpath, and every __FILE__ literal, which is the same object). A cache built in
    #    one checkout is served in another by pointing those objects at the new path.
    #
    # The layout this relies on (compile.c, ibf_* functions):
    #
    #   +--------------------------- header (36 bytes, native endian) ---------------------+
    #   | "YARB" | major u32 | minor u32 | size u32 | extra_size u32 | iseq_list_size u32   |
    #   | global_object_list_size u32 | iseq_list_offset u32 | global_object_list_offset u32|
    #   +-----------------------------------------------------------------------------------+
    #   | RUBY_PLATFORM\0 | iseq bodies, objects ... | object offset list (u32 each)      |
    #   +-----------------------------------------------------------------------------------+
    #
    # Everything refers to objects by index; the index is looked up in the offset list. An
    # object is one header byte (type in the low 5 bits, then special_const, frozen, internal)
    # followed by its body; a String body is encindex and length as "small values" and the bytes.
    # So an object can be replaced without moving anything: append the new object, write a new
    # offset list after it, and point the header at the new list.
    #
    # A string literal with the same bytes and encoding as a label or path is the same object as
    # the label or path (iseq strings are deduplicated), so a source that contains "<main>" or
    # its own absolute path cannot be rewritten safely; callers check that first.
    module ISeqBinary # :nodoc:
      HEADER = "a4L8"
      HEADER_SIZE = 36
      T_STRING = 0x05
      LABEL = /\A(?:(?:block(?: \(\d+ levels\))?|rescue|ensure) in )*<main>\z/.freeze
      TOP_LABEL = "<top (required)>"
      @native = BACKEND == :native ? Native : nil # (hot path: see ARCHITECTURE.md)
      @version = nil # this Ruby's IBF [major, minor], read on first use

      class << self
        # True when +binary+ is an IBF this module understands (this Ruby's version and platform).
        def supported?(binary) #: (String) -> bool
          return false if binary.bytesize < HEADER_SIZE

          magic, major, minor, size, extra = binary.unpack(HEADER)
          magic == "YARB" && [major, minor] == version && size == binary.bytesize && extra.zero?
        end

        # Returns a copy of +binary+ with each String object whose bytes are a key of
        # +replacements+ replaced by the value (same encoding), and, with labels: true, each
        # "<main>"-based label renamed to Ruby's "<top (required)>" one. Returns +binary+ itself
        # when nothing matched, and nil when the binary is not one it can parse.
        #: (String, Hash[String, String], ?labels: bool) -> String?
        def rewrite(binary, replacements, labels: false)
          return nil unless supported?(binary)

          _, _, _, _, _, _, count, _, list_offset = binary.unpack(HEADER)
          offsets = binary.unpack("L#{count}", offset: list_offset)
          targets = find_targets(binary, offsets, replacements, labels)
          return binary if targets.empty?

          out = binary.byteslice(0, list_offset)
          targets.each do |index, (header_byte, encindex, bytes)|
            out << ("\0" * ((4 - (out.bytesize % 4)) % 4))
            offsets[index] = out.bytesize
            out << header_byte.chr << small_value(encindex) << small_value(bytes.bytesize) << bytes
          end
          out << ("\0" * ((4 - (out.bytesize % 4)) % 4))
          new_list = out.bytesize
          out << offsets.pack("L*")
          header = binary.unpack(HEADER)
          header[3] = out.bytesize
          header[8] = new_list
          out[0, HEADER_SIZE] = header.pack(HEADER)
          out
        end

        # True when one of +strings+ occurs in +binary+ other than as a whole String object (for
        # example inside a literal the parser folded, like "#{__FILE__}:x"), so replacing the
        # objects would not move every mention of it.
        # (Native.ibf_mentioned_outside on the native backend: a cold boot asks for every file it
        # captures, and the native scan allocates nothing per occurrence.)
        #: (String, Array[String]) -> bool
        def ruby_mentioned_outside_objects?(binary, strings)
          _, _, _, _, _, _, count, _, list_offset = binary.unpack(HEADER)
          offsets = binary.unpack("L#{count}", offset: list_offset)
          strings.uniq.any? do |needle|
            needle = needle.b
            at = 0
            found = false
            while (at = binary.index(needle, at))
              index = object_ending_at(binary, offsets, at, at + needle.bytesize)
              unless index && string_object(binary, offsets[index])[1] == needle
                found = true
                break
              end
              at += needle.bytesize
            end
            found
          end
        end

        if BACKEND == :native
          # (Each distinct string scanned once; the scan reads bytes whatever the encoding.)
          def mentioned_outside_objects?(binary, strings) #: (String, Array[String]) -> bool
            i = 0
            while i < strings.length
              needle = strings[i]
              return true if strings.index(needle) == i && @native.ibf_mentioned_outside(binary, needle)

              i += 1
            end
            false
          end
        else
          alias_method :mentioned_outside_objects?, :ruby_mentioned_outside_objects?
        end

        private

        def version
          @version ||= RubyVM::InstructionSequence.compile("nil").to_binary.unpack("x4L2")
        end

        # Object index => [header byte, encindex, new bytes], for the String objects to replace.
        # The header byte is kept as is (type and frozen bits do not change).
        def find_targets(binary, offsets, replacements, labels)
          found = {}
          replacements = replacements.to_h { |from, to| [from.b, to.b] }
          candidates = replacements.keys
          candidates += ["<main>".b] if labels
          candidates.uniq.each do |needle|
            at = 0
            while (at = binary.index(needle, at))
              stop = at + needle.bytesize
              index = object_ending_at(binary, offsets, at, stop)
              if index && !found.key?(index)
                encindex, bytes = string_object(binary, offsets[index])
                header_byte = binary.getbyte(offsets[index])
                if (replacement = replacements[bytes])
                  found[index] = [header_byte, encindex, replacement]
                elsif labels && bytes.match?(LABEL)
                  found[index] = [header_byte, encindex, bytes.sub("<main>", TOP_LABEL)]
                end
              end
              at = stop
            end
          end
          found
        end

        # The index of the String object whose bytes end exactly at +stop+, if there is one.
        def object_ending_at(binary, offsets, at, stop)
          index = offsets.bsearch_index { |o| o > at }
          index = index ? index - 1 : offsets.length - 1
          return nil if index.negative?

          start = offsets[index]
          header = binary.getbyte(start)
          return nil unless (header & 0x1f) == T_STRING && (header & 0x20).zero?

          _, bytes, body_end = string_object(binary, start)
          body_end == stop && bytes ? index : nil
        end

        def string_object(binary, start)
          encindex, pos = small_value_at(binary, start + 1)
          len, pos = small_value_at(binary, pos)
          [encindex, binary.byteslice(pos, len), pos + len]
        end

        # compile.c's "small value": the number of trailing zero bits of the first byte, plus
        # one, is the length in bytes; the value is big-endian in the remaining bits.
        def small_value_at(binary, pos)
          c = binary.getbyte(pos)
          n = if c.odd? then 1
              elsif c.zero? then 9
              else (c & -c).bit_length
              end
          x = c >> n
          x = 0 if n == 9
          (1...n).each { |i| x = (x << 8) | binary.getbyte(pos + i) }
          [x, pos + n]
        end

        def small_value(x)
          return [(x << 1) | 1].pack("C") if x < 0x80

          bytes = []
          n = 0
          while n < 8 && (x >> (7 - n)).positive?
            bytes.unshift(x & 0xff)
            x >>= 8
            n += 1
          end
          first = ((x << 1) | 1) << n
          bytes.unshift(first & 0xff)
          bytes.pack("C*")
        end
      end
    end
  end
end

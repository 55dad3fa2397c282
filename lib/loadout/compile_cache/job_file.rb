# frozen_string_literal: true

module Loadout
  module CompileCache
    # The background worker's job, as a file of plain lines parsed strictly (never Marshal: a
    # job file that could be swapped would run any code Marshal.load can be made to run).
    #
    #   loadout-compile-jobs 1
    #   store UTF-8:/app/tmp/cache/loadout/store        the store to compile into
    #   shared 0                                        trust_shared_cache (1) or not (0)
    #   root UTF-8:/app                                 Key roots, in order (any number)
    #   group US-ASCII:0123456789abcdef                 a variant: the entries of one option set
    #   option debug_level 0                            its compile options (true, false, integers)
    #   file UTF-8:/app/lib/a.rb                        a file to compile into it
    #   self UTF-8:/app/tmp/cache/loadout/store.self-…  at most one, last: the self cache to write
    #   option … / file …                               its options and loadout's files
    #   end
    #
    # Every string is "ENCODING:bytes", bytes outside [A-Za-z0-9_./~+,=@-] as %XX, so a path
    # keeps its exact bytes and encoding. Anything else (an unknown line, a missing "end", a
    # field out of place) rejects the whole job.
    #
    # Written by Writer.job_text (in writer.rb: a boot that loads the writer does not load this
    # file too); read here, by the worker only.
    module JobFile # :nodoc:
      HEADER = "loadout-compile-jobs 1"
      STRING = /\A([A-Za-z0-9_-]+):((?:[A-Za-z0-9_.\/~+,=@-]|%\h\h)+)\z/.freeze
      OPTION_NAME = /\A[a-z_]+\z/.freeze
      OPTION_VALUE = /\A(?:true|false|-?\d{1,9})\z/.freeze

      Job = Struct.new(:store_path, :shared, :roots, :groups, :self_job)

      module_function

      # The Job in +text+, or nil unless every line is exactly where it belongs.
      #: (String) -> Job?
      def parse(text)
        lines = text.b.split("\n", -1)
        return nil unless lines.shift == HEADER && lines.pop == "" && lines.pop == "end"

        job = Job.new(nil, nil, [], [], nil)
        section = nil # the group or self job that option and file lines belong to
        lines.each do |line|
          tag, *fields = line.split(/ /, -1)
          case [tag, fields.size]
          when ["store", 1]
            return nil if job.store_path || !(job.store_path = string(fields[0]))
          when ["shared", 1]
            return nil unless job.shared.nil? && %w[0 1].include?(fields[0]) && job.store_path

            job.shared = fields[0] == "1"
          when ["root", 1]
            return nil unless !job.shared.nil? && job.groups.empty? && !job.self_job && (root = string(fields[0]))

            job.roots << root
          when ["group", 1]
            return nil if job.shared.nil? || job.self_job || !(variant = string(fields[0]))

            job.groups << (section = [variant, {}, []])
          when ["self", 1]
            return nil if job.shared.nil? || job.self_job || !(path = string(fields[0]))

            job.self_job = section = [path, [], {}]
          when ["option", 2]
            return nil unless section && fields[0].match?(OPTION_NAME) && fields[1].match?(OPTION_VALUE)

            options = section.equal?(job.self_job) ? section[2] : section[1]
            options[fields[0].to_sym] = value(fields[1])
          when ["file", 1]
            return nil unless section && (path = string(fields[0]))

            (section.equal?(job.self_job) ? section[1] : section[2]) << path
          else
            return nil
          end
        end
        job.store_path && !job.shared.nil? ? job : nil
      end

      # The String a field spells, or nil when it is not one (bad syntax, an unknown encoding,
      # bytes that are not valid in it).
      def string(field)
        m = STRING.match(field) or return nil
        encoding = Encoding.find(m[1])
        return nil unless encoding.name == m[1] # not an alias such as "external"

        s = m[2].gsub(/%(\h\h)/n) { Regexp.last_match(1).hex.chr }.force_encoding(encoding)
        s.valid_encoding? ? s : nil
      rescue ArgumentError
        nil
      end

      def value(text)
        case text
        when "true" then true
        when "false" then false
        else Integer(text, 10)
        end
      end
    end
  end
end

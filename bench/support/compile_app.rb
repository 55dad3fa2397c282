# frozen_string_literal: true

require "fileutils"

module Loadout
  module Bench
    # Writes a synthetic application for bench/compile_cache.rb: +files+ Ruby files spread over
    # directories of 100 (each a class with +methods+ methods of everyday shape: keyword
    # arguments, blocks, string interpolation, hashes, rescue), +yaml+ i18n-like YAML files, and
    # boot.rb, which requires every Ruby file by absolute path and loads every YAML file.
    # Contents depend only on the arguments, so copies in different directories are identical.
    module CompileApp
      module_function

      def write(root, files:, yaml:, methods: 4)
        FileUtils.mkdir_p(root)
        rb = Array.new(files) { |i| format("lib/gen/d%03d/file%05d.rb", i / 100, i) }
        rb.each_with_index { |rel, i| write_file(root, rel, ruby_source(i, methods)) }
        ymls = Array.new(yaml) { |i| format("config/locales/l%02d/locale%04d.yml", i / 50, i) }
        ymls.each_with_index { |rel, i| write_file(root, rel, yaml_source(i)) }
        write_file(root, "boot.rb", boot_source(rb, ymls))
        File.join(root, "boot.rb")
      end

      def write_file(root, rel, body)
        path = File.join(root, rel)
        FileUtils.mkdir_p(File.dirname(path))
        File.write(path, body)
      end

      def ruby_source(i, methods)
        body = +"# frozen_string_literal: true\n\nmodule Gen\n  class K#{i}\n    LIMIT = #{i % 97}\n\n"
        methods.times do |m|
          body << <<-RUBY
    def m#{m}(a, b = #{m}, *rest, key: :k#{m}, **opts, &blk)
      list = [a, b, *rest].map { |v| "\#{v}-#{i}-#{m}" }
      table = { name: "k#{i}", index: #{m}, key => list, "opts" => opts }
      return table if blk.nil?

      list.each_with_index.select { |(v, j)| j > LIMIT || v.size > #{m % 7} }.map { |v, _| blk.call(v) }
    rescue ArgumentError => e
      raise TypeError, "bad #{m}: \#{e.message}"
    end

          RUBY
        end
        body << "  end\nend\n"
      end

      def yaml_source(i)
        body = +"en:\n  section#{i}:\n"
        20.times do |k|
          body << "    key#{k}: \"Value #{k} for %{name} in section #{i}\"\n"
          body << "    nested#{k}:\n      one: \"One #{k}\"\n      other: \"%{count} items\"\n" if k.even?
        end
        body << "    list: [a, b, c, #{i}]\n"
      end

      def boot_source(rb, ymls)
        <<~RUBY
          # frozen_string_literal: true
          root = __dir__
          #{rb.inspect}.each { |f| require File.join(root, f) }
          require "yaml"
          #{ymls.inspect}.each { |f| YAML.load_file(File.join(root, f)) }
        RUBY
      end
    end
  end
end

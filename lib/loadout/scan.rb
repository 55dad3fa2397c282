# frozen_string_literal: true

require "rbconfig" unless defined?(::RbConfig) # never through $LOAD_PATH after setup: an app may have emptied it
require_relative "native"

module Loadout
  # Lists a directory tree in one walk (seed 000): every requirable file, every directory and each
  # directory's mtime. The native walk trusts readdir's d_type and stats only symlinks and
  # DT_UNKNOWN entries; the Ruby twin gives identical output.
  #
  # Rules, shared by both backends:
  # - order: a directory, then its files in readdir order, then its subdirectories, depth first;
  # - a symlinked directory is walked (paths go through the link), one that is its own ancestor
  #   is not (reported as :loop); a broken link is skipped;
  # - a directory named "x.rb" is a directory; only regular files (or links to them) are files;
  # - ignored directories (by name or absolute path) are not entered;
  # - nothing raises: unreadable or vanished directories and names that are not valid UTF-8 are
  #   skipped and listed in #errors as [relative_path, reason]; a missing root is an empty tree.
  module Scan
    DEFAULT_EXTENSIONS = [".rb", ".#{RbConfig::CONFIG["DLEXT"]}"].uniq.freeze
    DEFAULT_IGNORE = ["node_modules"].freeze

    # files: relative paths of requirable files; dirs: relative paths of directories ("" is the
    # root); dir_mtimes: nanosecond mtimes parallel to dirs; errors: [[relative_path, reason]].
    Tree = Struct.new(:files, :dirs, :dir_mtimes, :errors) do
      def empty?
        files.empty? && dirs.empty?
      end
    end

    class << self
      # Walks +root+ and returns a Tree.
      #: (String, ?extensions: Array[String], ?ignore: Array[String]) -> Tree
      def call(root, extensions: DEFAULT_EXTENSIONS, ignore: DEFAULT_IGNORE)
        root = String(root)
        extensions = string_list(:extensions, extensions)
        names, paths = string_list(:ignore, ignore).partition { |i| !i.start_with?("/") }
        files, dirs, mtimes, errors = walk(root, extensions, names, paths)
        errors.each { |pair| pair[1] = reason_name(pair[1]) if pair[1].is_a?(Integer) }
        Tree.new(files, dirs, mtimes, errors)
      end

      private

      def string_list(option, value)
        list = Array(value)
        unless list.all?(String)
          raise ArgumentError, "#{option} must be an Array of Strings, got #{value.inspect}"
        end

        list.map { |s| s.dup.freeze }
      end

      # Errno numbers become the lowercase errno name (:eacces, :enoent, ...).
      def reason_name(errno)
        klass = Errno.constants.lazy.map { |c| Errno.const_get(c) }
                     .find { |k| k.is_a?(Class) && k.const_defined?(:Errno) && k::Errno == errno }
        klass ? klass.name.split("::").last.downcase.to_sym : :"errno_#{errno}"
      end

      if BACKEND == :native
        def walk(root, extensions, ignore_names, ignore_paths)
          Native.scan(root, extensions, ignore_names, ignore_paths)
        end
      else
        def walk(root, extensions, ignore_names, ignore_paths)
          RubyWalk.new(root, extensions, ignore_names, ignore_paths).run
        end
      end
    end

    # The pure-Ruby twin of ext/loadout/scan.c. Without d_type, directories are found with a
    # glob for "*/" (which uses d_type inside Ruby) and requirable names are checked with one stat.
    class RubyWalk # :nodoc:
      Node = Struct.new(:rel, :parent, :dev, :ino)

      def initialize(root, extensions, ignore_names, ignore_paths)
        @root = root
        @prefix = root.end_with?("/") || root.empty? ? root : "#{root}/"
        @extensions = extensions
        @ignore_names = ignore_names
        @ignore_paths = ignore_paths
        @files = []
        @dirs = []
        @mtimes = []
        @errors = []
      end

      def run
        stack = [Node.new("", nil)]
        while (node = stack.pop)
          children = visit(node)
          stack.concat(children.reverse) if children
        end
        [@files, @dirs, @mtimes, @errors]
      end

      private

      def full(rel)
        rel.empty? ? @root : "#{@prefix}#{rel}"
      end

      def join(rel, name)
        rel.empty? ? name : "#{rel}/#{name}"
      end

      def visit(node)
        path = full(node.rel)
        begin
          stat = File.stat(path)
          entries = read_entries(path)
        rescue Errno::ENOENT, Errno::ENOTDIR => e
          @errors << [node.rel, e.class::Errno] if node.parent
          return
        rescue SystemCallError => e
          @errors << [node.rel, e.class::Errno]
          return
        end
        ancestor = node.parent
        while ancestor
          if ancestor.dev == stat.dev && ancestor.ino == stat.ino
            @errors << [node.rel, :loop]
            return
          end
          ancestor = ancestor.parent
        end
        node.dev = stat.dev
        node.ino = stat.ino
        @dirs << node.rel
        @mtimes << (stat.mtime.to_i * 1_000_000_000) + stat.mtime.nsec

        children = []
        entries.each do |name, kind|
          unless name.valid_encoding?
            @errors << [join(node.rel, name).b, :invalid_encoding]
            next
          end
          requirable = @extensions.any? { |ext| name.end_with?(ext) }
          if kind == :unknown
            # A symlink or an unknown type: follow it, as open(2) in require would.
            begin
              st = File.stat(full(join(node.rel, name)))
              kind = st.directory? ? :directory : (st.file? ? :file : :other)
            rescue SystemCallError => e
              @errors << [join(node.rel, name), e.class::Errno] if requirable
              next
            end
          end
          if kind == :directory
            next if @ignore_names.include?(name)
            next if !@ignore_paths.empty? && @ignore_paths.include?("#{@prefix}#{join(node.rel, name)}")

            children << Node.new(join(node.rel, name), node)
          elsif kind == :file && requirable
            @files << join(node.rel, name)
          end
        end
        children
      end

      # [[name, kind]] for every entry but . and .., names tagged UTF-8; kind is :directory,
      # :file, :unknown (a link or unknown type: stat it) or :other. Raises SystemCallError when
      # the directory cannot be read, before anything about it is recorded.
      if Dir.respond_to?(:scan)
        # Ruby 4.1+ (Feature #21800): Dir.scan yields each name with its d_type, like the C walk.
        def read_entries(path)
          entries = []
          Dir.scan(path) do |name, type|
            next if name == "." || name == ".."

            kind = case type
                   when :directory then :directory
                   when :file then :file
                   when :link, :unknown, nil then :unknown
                   else :other
                   end
            entries << [name.dup.force_encoding(Encoding::UTF_8), kind]
          end
          entries
        end
      else
        # Without d_type in Ruby, a glob for "*/" finds the subdirectories (glob uses d_type
        # internally) and every requirable name costs one stat, since it may be a link.
        def read_entries(path)
          names = Dir.children(path)
          dirs = Dir.glob("*/", File::FNM_DOTMATCH, base: path, sort: false)
          # A Hash, not a Set: requiring "set" would activate the set default gem and change
          # Gem.loaded_specs compared to a boot without loadout.
          dirs = dirs.each_with_object({}) { |n, h| h[n.chomp("/").force_encoding(Encoding::UTF_8)] = true }
          names.map! do |name|
            name.force_encoding(Encoding::UTF_8)
            kind = if dirs.key?(name)
                     :directory
                   elsif @extensions.any? { |ext| name.end_with?(ext) }
                     :unknown
                   else
                     :other
                   end
            [name, kind]
          end
        end
      end
    end
    private_constant :RubyWalk
  end
end

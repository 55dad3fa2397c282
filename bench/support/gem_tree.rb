# frozen_string_literal: true

require "fileutils"

module Loadout
  module Bench
    # Writes a fake installed-gems tree: GEM_HOME-style "<root>/gems/gN-1.0/lib" dirs, each with
    # +files+ tiny Ruby files spread over a few subdirectories (so the load path is long and the
    # compile cost per file is negligible), and returns the lpaths and the feature list.
    #
    #   tree = Loadout::Bench::GemTree.new("/tmp/app", gems: 300, files: 20).write
    #   tree.load_path # => ["/tmp/app/gems/g0-1.0/lib", ...]
    #   tree.features  # => ["g0/f0", "g0/sub1/f1", ...]
    class GemTree
      attr_reader :root, :gems, :files

      def initialize(root, gems: 300, files: 20)
        @root = root
        @gems = gems
        @files = files
      end

      def load_path
        (0...@gems).map { |g| "#{@root}/gems/g#{g}-1.0/lib" }
      end

      def features
        (0...@gems).flat_map { |g| (0...@files).map { |f| feature(g, f) } }
      end

      # Creates the tree unless a complete one is already there (marker file).
      def write
        marker = "#{@root}/.complete-#{@gems}-#{@files}"
        return self if File.exist?(marker)

        FileUtils.rm_rf("#{@root}/gems")
        (0...@gems).each do |g|
          lib = "#{@root}/gems/g#{g}-1.0/lib"
          (0...@files).each do |f|
            path = "#{lib}/#{feature(g, f)}.rb"
            FileUtils.mkdir_p(File.dirname(path))
            File.write(path, "$bench_count += 1\n")
          end
          # Also files nobody requires, as real gems have (tests, templates, other versions).
          FileUtils.mkdir_p("#{lib}/g#{g}/unused")
          3.times { |u| File.write("#{lib}/g#{g}/unused/u#{u}.rb", "") }
        end
        FileUtils.mkdir_p("#{@root}/specifications")
        File.write(marker, "")
        self
      end

      private

      def feature(gem, file)
        sub = file % 4
        sub.zero? ? "g#{gem}/f#{file}" : "g#{gem}/sub#{sub}/f#{file}"
      end
    end
  end
end

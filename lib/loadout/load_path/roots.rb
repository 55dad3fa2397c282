# frozen_string_literal: true

require "rbconfig" unless defined?(RbConfig)

module Loadout
  module LoadPath
    # Decides whether a load dir is :stable (its file set only changes with a new path: Ruby's own
    # lib dirs, installed gems under Gem.path or the bundle path) or :volatile (everything else).
    # Computed once per install; the stable roots are part of the snapshot fingerprint.
    class Roots # :nodoc:
      CONFIG = RbConfig::CONFIG
      # Under these the file set can change without the path changing (dpkg, site installs).
      VOLATILE = %w[sitedir sitearchdir vendordir vendorarchdir].map { |k| CONFIG[k] }.compact.freeze
      # [root, root with a trailing "/"]: what under? compares (made once, not per dir).
      VOLATILE_PAIRS = VOLATILE.map { |r| [r, r.end_with?("/") ? r : "#{r}/"].freeze }.freeze

      attr_reader :stable

      # +stable+: the roots another process computed (`loadout precompile` and `check` ask the
      # app's bundle for them: the CLI's own Gem.path and bundle path may differ).
      def initialize(stable = nil)
        @stable = stable ? stable.dup.freeze : stable_roots
        @stable_pairs = @stable.map { |r| [r, r.end_with?("/") ? r : "#{r}/"].freeze }.freeze
        @real = {}
      end

      # :stable or :volatile for a dir at +expanded+ (File.expand_path of the item) whose
      # realpath is +base+: a gem dir reached through a symlinked gem home is still a gem dir.
      def classify(expanded, base = expanded)
        other = expanded == base ? nil : base # (no Array of the two: once per dir)
        return :volatile if under_any?(expanded, VOLATILE_PAIRS) || (other && under_any?(other, VOLATILE_PAIRS))
        return :stable if under_any?(expanded, @stable_pairs) || (other && under_any?(other, @stable_pairs))

        :volatile
      end

      # Whether +base+, the realpath stored for the stable dir at +expanded+, still holds: the
      # realpath of its stable root (computed once per process) is unchanged, and nothing under
      # a stable root changes without a new path. A gem home behind a symlink that now points
      # elsewhere (a deploy switching releases) fails this and the dir's realpath is computed.
      def trusts_base?(expanded, base)
        root = nil
        @stable_pairs.each do |pair|
          root = pair[0] if under?(expanded, pair) && (root.nil? || pair[0].length > root.length)
        end
        return false unless root

        real, prefix = @real[root] ||= begin
          path = begin
            File.realpath(root)
          rescue SystemCallError
            root
          end
          [path, path.end_with?("/") ? path : "#{path}/"].freeze
        end
        base == real || base.start_with?(prefix)
      end

      # "gems/rack-3.0.8/lib" for a dir at +expanded+ under a gem home's gems/, extensions/ or
      # bundler/gems/ dir: the same gem version, installed in any gem home, holds the same files
      # (Lister keeps its listing under that name too, for a bundle restored elsewhere). nil for
      # anything else (Ruby's own dirs stay where they are).
      def gem_relative(expanded)
        root = nil
        @stable_pairs.each do |pair|
          next unless under?(expanded, pair) && pair[0].end_with?(*GEM_DIRS)

          root = pair[0] if root.nil? || pair[0].length > root.length
        end
        return nil unless root
        return nil if expanded == root

        kind = GEM_DIRS.find { |d| root.end_with?(d) }.delete_prefix("/").tr("/", "-")
        "#{kind}/#{expanded.byteslice(root.bytesize + 1, expanded.bytesize)}"
      end

      private

      GEM_DIRS = %w[/bundler/gems /gems /extensions].freeze
      private_constant :GEM_DIRS

      def under?(path, (root, prefix))
        path == root || path.start_with?(prefix)
      end

      def under_any?(path, pairs)
        pairs.any? { |pair| under?(path, pair) }
      end

      # Gem dirs, not gem homes: "<home>/gems/x-1.0/lib" is stable, "<home>/whatever" is not.
      def stable_roots
        roots = [CONFIG["rubylibdir"], CONFIG["rubyarchdir"]]
        gem_dirs = []
        gem_dirs.concat(Gem.path) if defined?(Gem) && Gem.respond_to?(:path)
        if defined?(Bundler) && Bundler.respond_to?(:bundle_path)
          begin
            gem_dirs << Bundler.bundle_path.to_s
          rescue StandardError, LoadError
            nil
          end
        end
        gem_dirs.each do |d|
          roots.push(File.join(d, "gems"), File.join(d, "extensions"), File.join(d, "bundler", "gems"))
        end
        roots.compact.map { |r| File.expand_path(r) }.uniq.freeze
      end
    end
  end
end

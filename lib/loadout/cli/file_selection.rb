# frozen_string_literal: true

module Loadout
  class CLI
    # Which files `loadout precompile` compiles and `loadout check` (before any boot recorded
    # what it loads) checks: every Ruby, YAML and JSON file under the app root, and with
    # --gemfile under the dirs the bundle's gems put on $LOAD_PATH.
    #
    # The app root's walk leaves out VCS data, caches, logs, front-end dependencies, and the
    # bundle itself when it lives inside the app (vendor/bundle: thousands of gem specs,
    # fixtures and generator templates a boot never loads). Gems are covered by --gemfile, and
    # then only through their load path dirs.
    class FileSelection # :nodoc:
      KINDS = {
        iseq: [".rb", ".rake", "Rakefile"],
        yaml: [".yml", ".yaml"],
        json: [".json"]
      }.freeze
      SKIP_DIRS = %w[.git tmp log node_modules coverage].freeze

      # +bundle+: the app's AppBundle result; +ignore+: Config#ignore_directories.
      def initialize(root, bundle, ignore)
        @root = root
        @bundle = bundle
        @ignore = (SKIP_DIRS + ignore + bundle_dirs).uniq
      end

      def self.kind_of(path) #: (String) -> Symbol?
        KINDS.find { |_, exts| exts.any? { |e| path.end_with?(e) } }&.first
      end

      # Dirs inside the app root that hold installed gems: the bundle path (vendor/bundle, or
      # wherever BUNDLE_PATH points) found from the app's Gem.path, and vendor/bundle itself.
      def bundle_dirs #: () -> Array[String]
        prefix = "#{@root}/"
        homes = @bundle.gem_path.map { |g| File.expand_path(g) }.select { |g| g.start_with?(prefix) }
        # <bundle path>/ruby/<version> is the gem home Bundler makes: skip the whole bundle path.
        dirs = homes.map { |h| File.basename(File.dirname(h)) == "ruby" ? File.dirname(File.dirname(h)) : h }
        dirs << File.join(@root, "vendor/bundle")
        dirs.reject { |d| d == @root }.uniq
      end

      # The dirs of the bundle's gems: each $LOAD_PATH entry inside a gem home, and an engine's
      # app/ beside its lib/.
      def gem_roots #: () -> Array[String]
        homes = @bundle.gem_path.map { |g| File.expand_path(g) }
        @bundle.load_path.map { |lp| File.expand_path(lp) }.select do |lp|
          homes.any? { |home| lp.start_with?("#{home}/") } && File.directory?(lp)
        end.flat_map do |lp|
          app = File.join(File.dirname(lp), "app")
          lp.end_with?("/lib") && File.directory?(app) ? [lp, app] : [lp]
        end.uniq
      end

      # [[kind, abspath]] for every file under +dirs+ of +kinds+, minus paths matching +excludes+.
      #: (Array[String], Array[Symbol], Array[Regexp]) -> Array[[Symbol, String]]
      def collect(dirs, kinds, excludes)
        exts = kinds.flat_map { |k| KINDS[k] }
        seen = {}
        dirs.each do |dir|
          result = Scan.call(dir, extensions: exts.select { |e| e.start_with?(".") }, ignore: @ignore)
          paths = result.files.map { |rel| File.join(dir, rel) }
          names = exts.reject { |e| e.start_with?(".") } # "Rakefile"
          paths += names.map { |name| File.join(dir, name) }.select { |p| File.file?(p) }
          paths.each do |path|
            next if excludes.any? { |re| re.match?(path) }

            seen[path] ||= self.class.kind_of(path)
          end
        end
        seen.map { |path, kind| [kind, path] }.select { |kind, _| kinds.include?(kind) }
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  class CLI
    # Which files `loadout precompile` compiles and `loadout check` (before any boot recorded
    # what it loads) checks: every Ruby, YAML and JSON file under the app root, and with
    # --gemfile every other dir of the bundle's $LOAD_PATH (the gems', Ruby's own standard
    # library, path gems outside the app) and the data dirs of each gem (see DATA_DIRS).
    #
    # The app root's walk leaves out VCS data, caches, logs, front-end dependencies, and the
    # bundle itself when it lives inside the app (vendor/bundle: thousands of gem specs,
    # fixtures and generator templates a boot never loads). Gems are covered by --gemfile, and
    # then only through their load path and data dirs.
    class FileSelection # :nodoc:
      KINDS = {
        iseq: [".rb", ".rake", "Rakefile"],
        yaml: [".yml", ".yaml"],
        json: [".json"]
      }.freeze
      SKIP_DIRS = %w[.git tmp log node_modules coverage].freeze
      # A gem's dirs besides its require paths that a boot loads files from: an engine's app/ and
      # config/ (routes, initializers, locales), and the locale dirs gems hand to I18n
      # (rails-i18n's rails/locale, devise-i18n's rails/locales, locale/, locales/).
      DATA_DIRS = %w[app config rails locale locales].freeze

      # +bundle+: the app's AppBundle result; +ignore+: Config#ignore_directories.
      def initialize(root, bundle, ignore)
        @root = root
        @bundle = bundle
        @ignore = (SKIP_DIRS + ignore + bundle_dirs).uniq
      end

      # The Regexp of an --exclude argument; a usage error naming the option when it is not one.
      def self.exclude(source) #: (String) -> Regexp
        Regexp.new(source)
      rescue RegexpError => e
        raise OptionParser::InvalidArgument.new(source, "(not a regular expression: #{e.message})")
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

      # The dirs --gemfile walks: every $LOAD_PATH item of the app's bundle that is a directory,
      # except the app's own (under the app root and outside any gem home: the app root's walk
      # covers them), and each gem's DATA_DIRS beside its lib.
      def bundle_roots #: () -> Array[String]
        homes = @bundle.gem_path.map { |g| File.expand_path(g) }
        prefix = "#{@root}/"
        entries = @bundle.load_path.map { |lp| File.expand_path(lp) }.select do |lp|
          in_home = homes.any? { |home| lp.start_with?("#{home}/") }
          (in_home || !(lp == @root || lp.start_with?(prefix))) && File.directory?(lp)
        end
        data = entries.filter_map { |lp| gem_dir(lp, homes) }.uniq.flat_map do |dir|
          DATA_DIRS.map { |name| File.join(dir, name) }.select { |d| File.directory?(d) }
        end
        (entries + data).uniq
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

      private

      # The gem dir holding the $LOAD_PATH item +lp+: "<home>/gems/<name>" or
      # "<home>/bundler/gems/<name>" for an installed gem, the parent of a lib dir beside a
      # gemspec for a path gem; nil otherwise (Ruby's own dirs).
      def gem_dir(lp, homes)
        homes.each do |home|
          %w[gems bundler/gems].each do |sub|
            base = "#{home}/#{sub}/"
            return "#{base}#{lp.delete_prefix(base).split("/").first}" if lp.start_with?(base)
          end
        end
        parent = File.dirname(lp)
        File.basename(lp) == "lib" && !Dir.glob("*.gemspec", base: parent).empty? ? parent : nil
      end
    end
  end
end

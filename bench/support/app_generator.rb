# frozen_string_literal: true

require "fileutils"

module Loadout
  module Bench
    # Writes a realistic, deterministic (by seed) application for boot benchmarks:
    #
    # - +gems+ gem directories under gems/, each with lib/ on $LOAD_PATH and lib/<gem>.rb that
    #   requires its files: nested namespaces, a mix of require and require_relative, autoloads
    #   referenced later, optional requires rescued with LoadError, stdlib requires;
    # - +files+ Ruby files across the gems (2-4 KB each, 15-30 methods, like real gem code);
    # - an app/ tree of files/8 files loaded Rails-style (every app/**/*.rb required in order);
    # - +yaml+ locale files read at boot with YAML.load_file, and a few JSON files;
    # - boot.rb, which sets up plain Ruby, Bootsnap or loadout (BENCH_MODE) and boots it all.
    #
    #   AppGenerator.new("/tmp/app", seed: 1, gems: 200, files: 3000, yaml: 60).generate
    class AppGenerator
      WORDS = %w[active record model view route cable storage mailer job queue cache store http json
                 xml auth token rate limit pool thread async event stream parse render format money
                 time zone geo image pdf search index graph client server socket retry policy audit
                 state machine billing invoice tax payment ledger report export import sync].freeze

      attr_reader :dir, :gem_names

      # +layout+:
      # - :plain (BOOT): gem lib dirs appended to $LOAD_PATH, RubyGems' require in place;
      # - :bundler (BUNDLER_BOOT): the layout a Bundler app has: gems under a gem home, their lib
      #   dirs ahead of Ruby's own in shuffled order, RubyGems' require removed, default gems and
      #   already-loaded features required from every gem, a Zeitwerk-managed app/ with implicit
      #   namespaces;
      # - :unbundled (UNBUNDLED_BOOT): no Bundler: RubyGems' require in place, and the app puts
      #   the gems' and its components' lib dirs at the front of $LOAD_PATH ($LOAD_PATH.unshift,
      #   as monorepos and test runners do), ahead of RubyGems' insert index, so default gems
      #   required by name make RubyGems walk them; most requires name features already loaded
      #   (each file requires its gem's dependencies again), 30 optional requires of missing
      #   features rescued with LoadError, a fifth of the gems using autoload, the Zeitwerk app
      #   with its dirs on $LOAD_PATH too (as Rails < 7.1 put autoload paths there).
      LAYOUTS = %i[plain bundler unbundled].freeze

      def initialize(dir, seed: 1, gems: 200, files: 3000, yaml: 60, layout: :plain)
        raise ArgumentError, "layout: #{layout.inspect} (one of #{LAYOUTS.join(", ")})" unless LAYOUTS.include?(layout)

        @dir = dir
        @seed = seed
        @gems = gems
        @files = files
        @yaml = yaml
        @layout = layout
        @bundler = layout == :bundler
        @unbundled = layout == :unbundled
        @optional_left = 30 # optional requires of missing features (unbundled)
        @rng = Random.new(seed)
        @gem_names = []
        @autoloads = [] # [constant path] referenced from app code, so each autoload fires
        @plain_names = [] # the gems written so far, by feature name (an unbundled gem's dependencies)
      end

      # Writes the tree (replacing +dir+); returns self.
      def generate
        FileUtils.rm_rf(@dir)
        FileUtils.mkdir_p(@dir)
        per_gem = split(@files, @gems)
        @gems.times { |i| write_gem(i, per_gem[i]) }
        write_app([@files / 8, 10].max)
        write_locales
        write_json
        write("boot.rb", self.class.entry_point(layout: @layout))
        write("gems.txt", @gem_names.join("\n"))
        self
      end

      private

      def write(rel, body)
        path = File.join(@dir, rel)
        FileUtils.mkdir_p(File.dirname(path))
        File.write(path, body)
      end

      # +total+ split over +n+ buckets, uneven like real gems (a few big, many small), each >= 1.
      def split(total, count)
        weights = Array.new(count) { 0.2 + (@rng.rand**3) * 4 }
        sum = weights.sum
        sizes = weights.map { |w| [(total * w / sum).floor, 1].max }
        sizes[@rng.rand(count)] += total - sizes.sum if sizes.sum < total
        sizes
      end

      def camel(name)
        name.split("_").map(&:capitalize).join
      end

      def gem_name(index)
        "#{WORDS[@rng.rand(WORDS.size)]}_#{WORDS[@rng.rand(WORDS.size)]}_#{index}"
      end

      # Default gems and stdlib a gem's main file requires (found in Ruby's own dirs, after
      # every gem dir in a Bundler $LOAD_PATH).
      STDLIB = %w[set json date time securerandom forwardable logger uri digest monitor tempfile fileutils
                  pathname ostruct erb cgi base64 bigdecimal openssl strscan stringio tsort delegate singleton
                  observer English benchmark shellwords optparse timeout weakref open3 ipaddr zlib socket].freeze

      # Unbundled: one gem in six is a component of the app (components/<name>/lib, a monorepo's
      # part); the rest are installed gems under the gem home, put on $LOAD_PATH by the app.
      def gem_lib(name, index)
        return "components/#{name}/lib" if @unbundled && (index % 6) == 5
        return "gemhome/gems/#{name}-1.#{index}.0/lib" if @bundler || @unbundled

        "gems/#{name}/lib"
      end

      # The lib dir as gems.txt names it (boot.rb builds the path from it).
      def gem_entry(name, index)
        return gem_lib(name, index).delete_suffix("/lib") if @unbundled

        @bundler ? "#{name}-1.#{index}.0" : name
      end

      def write_gem(index, count)
        name = gem_name(index)
        deps = @unbundled ? @plain_names.sample([@plain_names.size, 2].min, random: @rng) : []
        @plain_names << name
        @gem_names << gem_entry(name, index)
        mod = camel(name)
        lib = gem_lib(name, index)
        subs = Array.new([count / 6, 1].max) { |i| "#{WORDS[@rng.rand(WORDS.size)]}#{i}" }
        entries = Array.new(count) { |i| [subs[i % subs.size], "#{WORDS[@rng.rand(WORDS.size)]}_#{i}"] }
        top = +"# frozen_string_literal: true\n\nrequire \"set\"\nrequire \"#{name}/version\"\n"
        deps.each { |d| top << "require \"#{d}\"\n" }
        STDLIB.sample(3, random: @rng).each { |f| top << "require \"#{f}\"\n" } if @bundler || @unbundled
        top << "\nmodule #{mod}\n"
        relative = []
        autoloads = !@unbundled || (index % 5).zero?
        entries.each_with_index do |(sub, file), i|
          feature = "#{name}/#{sub}/#{file}"
          body = ruby_file([mod, camel(sub), camel(file)], @rng.rand(15..30))
          # Requires of features already loaded, as real gem files make them (unbundled: their
          # gem's dependencies and a default gem again, too).
          if @unbundled
            again = deps.map { |d| "require \"#{d}\"\n" }.join
            body = "require \"set\"\nrequire \"#{name}/version\"\n#{again}" \
                   "require \"#{STDLIB.sample(random: @rng)}\"\n#{body}"
          elsif @bundler
            body = "require \"set\"\nrequire \"#{name}/version\"\n#{body}"
          end
          write("#{lib}/#{feature}.rb", body)
          case i % 10
          when 0
            next unless autoloads # required by the main file like the rest

            top << "  autoload :#{camel(file)}Entry, \"#{feature}_entry\"\n"
            autoload_file(lib, name, mod, sub, file)
          when 1, 2 then relative << feature
          end
        end
        top << "end\n\n"
        entries.each_with_index do |(sub, file), i|
          next if (i % 10) == 1 || (i % 10) == 2

          top << "require \"#{name}/#{sub}/#{file}\"\n"
        end
        relative.each { |f| top << "require_relative \"#{f}\"\n" }
        if @unbundled
          if @optional_left.positive? && (index % [@gems / 30, 1].max).zero?
            @optional_left -= 1
            top << "\nbegin\n  require \"#{name}/native_speedup\"\nrescue LoadError\n  #{mod}::NATIVE = false\nend\n"
          end
        elsif @rng.rand < 0.3
          top << "\nbegin\n  require \"#{name}/native_speedup\"\nrescue LoadError\n  #{mod}::NATIVE = false\nend\n"
        end
        write("#{lib}/#{name}.rb", top)
        write("#{lib}/#{name}/version.rb",
              "# frozen_string_literal: true\n\nmodule #{mod}\n  VERSION = \"#{index}.#{@rng.rand(10)}.0\"\nend\n")
      end

      def autoload_file(lib, name, mod, sub, file)
        const = "#{camel(file)}Entry"
        write("#{lib}/#{name}/#{sub}/#{file}_entry.rb",
              "# frozen_string_literal: true\n\nmodule #{mod}\n  module #{const}\n    LOADED = true\n  end\nend\n")
        @autoloads << "#{mod}::#{const}"
      end

      # A module nest holding a class with +methods+ methods of assorted shapes.
      def ruby_file(path, methods)
        *mods, klass = path
        out = +"# frozen_string_literal: true\n\n"
        mods.each_with_index { |m, i| out << "#{"  " * i}module #{m}\n" }
        ind = "  " * mods.size
        out << "#{ind}class #{klass}\n"
        out << "#{ind}  DEFAULTS = { limit: #{@rng.rand(100)}, name: #{klass.inspect}, tags: %w[a b c] }.freeze\n\n"
        out << "#{ind}  attr_reader :options\n\n"
        out << "#{ind}  def initialize(**options)\n#{ind}    @options = DEFAULTS.merge(options)\n#{ind}  end\n"
        methods.times { |i| out << method_body(ind, i) }
        out << "#{ind}end\n"
        mods.size.times { |i| out << "#{"  " * (mods.size - 1 - i)}end\n" }
        out
      end

      def method_body(ind, index)
        name = "#{WORDS[@rng.rand(WORDS.size)]}_#{index}"
        case @rng.rand(4)
        when 0
          "\n#{ind}  def #{name}(items)\n#{ind}    items.map { |x| x.to_s * #{@rng.rand(1..3)} }" \
            ".select { |s| s.size > #{@rng.rand(5)} }\n#{ind}  end\n"
        when 1
          "\n#{ind}  def #{name}(value, fallback = nil)\n#{ind}    return fallback if value.nil?\n\n" \
            "#{ind}    case value\n#{ind}    when Integer then value * #{@rng.rand(1..9)}\n" \
            "#{ind}    when String then value.upcase\n#{ind}    else value.inspect\n#{ind}    end\n#{ind}  end\n"
        when 2
          "\n#{ind}  def #{name}\n#{ind}    @#{name} ||= begin\n#{ind}      h = {}\n" \
            "#{ind}      #{@rng.rand(3..8)}.times { |i| h[\"k\#{i}\"] = i * #{@rng.rand(10)} }\n" \
            "#{ind}      h\n#{ind}    end\n#{ind}  end\n"
        else
          "\n#{ind}  def #{name}(a, b: #{@rng.rand(10)}, **rest)\n" \
            "#{ind}    raise ArgumentError, \"bad \#{a}\" if a.nil?\n\n" \
            "#{ind}    [a, b, rest.keys.sort].flatten.compact.join(\"-\")\n#{ind}  end\n"
        end
      end

      def write_app(count)
        return write_zeitwerk_app(count) if @bundler || @unbundled

        dirs = %w[models controllers services/billing services/sync jobs mailers]
        count.times do |i|
          dir = dirs[i % dirs.size]
          base = "#{WORDS[@rng.rand(WORDS.size)]}_#{i}"
          klass = camel(base) + (dir == "controllers" ? "Controller" : "")
          uses = Array.new(2) { @autoloads.empty? ? "Object" : @autoloads[@rng.rand(@autoloads.size)] }
          body = ruby_file([klass], @rng.rand(10..25))
          body << "\n#{klass}::USES = [#{uses.join(", ")}].freeze\n"
          write("app/#{dir}/#{base}#{"_controller" if dir == "controllers"}.rb", body)
        end
        # Every autoload is referenced at least once, so every one fires during boot.
        refs = @autoloads.map { |c| "#{c}::LOADED" }.join(",\n  ")
        write("app/zz_autoloads.rb", "# frozen_string_literal: true\n\nAUTOLOADED = [\n  #{refs}\n].freeze\n")
      end

      # app/ as Zeitwerk manages it: one constant per file, namespaces from directories (most of
      # them implicit: no file of their own), eager loaded at boot like a production Rails app.
      def write_zeitwerk_app(count)
        dirs = %w[models controllers services/billing services/sync jobs mailers models/accounts]
        count.times do |i|
          dir = dirs[i % dirs.size]
          base = "#{WORDS[@rng.rand(WORDS.size)]}_#{i}"
          klass = camel(base) + (dir == "controllers" ? "Controller" : "")
          namespace = dir.split("/").drop(1).map { |d| camel(d) }
          uses = Array.new(2) { @autoloads.empty? ? "Object" : @autoloads[@rng.rand(@autoloads.size)] }
          body = ruby_file(namespace + [klass], @rng.rand(10..25))
          body << "\n#{(namespace + [klass]).join("::")}::USES = [#{uses.join(", ")}].freeze\n"
          write("app/#{dir}/#{base}#{"_controller" if dir == "controllers"}.rb", body)
        end
        refs = @autoloads.map { |c| "#{c}::LOADED" }.join(",\n  ")
        write("config/autoloads.rb", "# frozen_string_literal: true\n\nAUTOLOADED = [\n  #{refs}\n].freeze\n")
      end

      def write_locales
        langs = %w[en fr de es it pt nl sv pl ja]
        @yaml.times do |i|
          lang = langs[i % langs.size]
          lines = ["#{lang}:"]
          @rng.rand(4..8).times do |s|
            lines << "  section_#{s}:"
            @rng.rand(5..12).times do |k|
              lines << "    key_#{k}: \"#{WORDS[@rng.rand(WORDS.size)]} %{name} #{@rng.rand(1000)}\""
            end
            lines << "    list: [#{Array.new(3) { WORDS[@rng.rand(WORDS.size)] }.join(", ")}]"
            lines << "    count: #{@rng.rand(100)}"
          end
          write("config/locales/#{lang}_#{i}.yml", "#{lines.join("\n")}\n")
        end
      end

      def write_json
        3.times do |i|
          pairs = Array.new(20) do |k|
            "\"#{WORDS[@rng.rand(WORDS.size)]}_#{k}\": [#{@rng.rand(100)}, \"#{WORDS[@rng.rand(WORDS.size)]}\"]"
          end
          write("config/data_#{i}.json", "{#{pairs.join(", ")}}\n")
        end
      end

      # The generated app's entry point. BENCH_MODE: plain | bootsnap | loadout. It prints one
      # line: a digest of what booted (features in order, relative; data read), for equality checks.
      BOOT = <<~'RUBY'
        # frozen_string_literal: true

        app = __dir__
        cache = ENV.fetch("BENCH_CACHE", File.join(app, "tmp/cache"))
        # Like bundler/setup: every gem's lib dir is on $LOAD_PATH before the boot cache is set up.
        gems = File.read(File.join(app, "gems.txt")).split("\n")
        gems.each { |g| $LOAD_PATH << File.join(app, "gems", g, "lib") }
        case ENV.fetch("BENCH_MODE", "plain")
        when "bootsnap"
          require "bootsnap"
          Bootsnap.setup(cache_dir: cache, development_mode: ENV["BENCH_DEV"] == "1", load_path_cache: true,
                         compile_cache_iseq: true, compile_cache_yaml: true)
        when "loadout"
          require "loadout"
          Loadout.setup(cache_dir: cache, root: app, development_mode: ENV["BENCH_DEV"] == "1")
        end
        require "yaml"
        require "json"
        gems.each { |g| require g }
        locales = Dir[File.join(app, "config/locales/*.yml")].sort.map { |f| YAML.load_file(f) }
        data = Dir[File.join(app, "config/*.json")].sort.map { |f| JSON.load_file(f) }
        Dir[File.join(app, "app/**/*.rb")].sort.each { |f| require f }
        require "digest"
        features = $LOADED_FEATURES.select { |f| f.start_with?("#{app}/") }.map { |f| f.delete_prefix("#{app}/") }
        puts "digest=#{Digest::SHA256.hexdigest([features, locales, data, AUTOLOADED.size].inspect)} features=#{features.size}"
        # (JRuby's GC.stat has no allocation count: bench/jruby_index.rb boots this entry point too.)
        puts "stats objects=#{GC.stat[:total_allocated_objects]} gc=#{GC.count}"
      RUBY
      private_constant :BOOT

      # The Bundler-layout entry point: what bundler/setup leaves behind (gem dirs under a
      # Gem.path entry, inserted at Gem.load_path_insert_index, RubyGems' require replaced by
      # Ruby's own), then the boot cache, then a Rails-like boot. Prints the digest line and
      # "stats objects=N gc=N" (allocations and GCs of the whole boot).
      BUNDLER_BOOT = <<~'RUBY'
        # frozen_string_literal: true

        app = __dir__
        cache = ENV.fetch("BENCH_CACHE", File.join(app, "tmp/cache"))
        home = File.join(app, "gemhome")
        Gem.paths = { "GEM_HOME" => home, "GEM_PATH" => ([home] + Gem.path).uniq.join(File::PATH_SEPARATOR) }
        gems = File.read(File.join(app, "gems.txt")).split("\n")
        paths = gems.map { |g| File.join(home, "gems", g, "lib") }.shuffle(random: Random.new(gems.size))
        $LOAD_PATH.insert(Gem.load_path_insert_index, *paths)
        [Kernel.singleton_class, Kernel].each do |k|
          next unless k.private_method_defined?(:gem_original_require)

          private_require = k.private_method_defined?(:require)
          k.send(:remove_method, :require) rescue nil
          k.send(:define_method, :require, k.instance_method(:gem_original_require))
          k.send(:private, :require) if private_require
        end
        layers = ENV.fetch("BENCH_LAYERS", "all")
        case ENV.fetch("BENCH_MODE", "plain")
        when "bootsnap"
          require "bootsnap"
          Bootsnap.setup(cache_dir: cache, development_mode: ENV["BENCH_DEV"] == "1",
                         load_path_cache: layers != "cc", compile_cache_iseq: layers != "lp",
                         compile_cache_yaml: layers != "lp", compile_cache_json: layers != "lp")
        when "loadout"
          require "loadout"
          Loadout.setup(cache_dir: cache, root: app, development_mode: ENV["BENCH_DEV"] == "1",
                        load_path_cache: layers != "cc", compile_cache: layers != "lp")
        when "floor" # what a cache doing its job for free would cost: bench/support/boot_floor.rb
          load ENV.fetch("BENCH_FLOOR_LIB")
          BootFloor.start(ENV.fetch("BENCH_FLOOR_PHASE"), cache)
        end
        require "zeitwerk"
        require "yaml"
        require "json"
        gems.each { |g| require g.sub(/-1\.\d+\.0\z/, "") }
        locales = Dir[File.join(app, "config/locales/*.yml")].sort.map { |f| YAML.load_file(f) }
        data = Dir[File.join(app, "config/*.json")].sort.map { |f| JSON.load_file(f) }
        loader = Zeitwerk::Loader.new
        loader.push_dir(File.join(app, "app/models"))
        %w[controllers services jobs mailers].each { |d| loader.push_dir(File.join(app, "app", d)) }
        loader.setup
        loader.eager_load
        require File.join(app, "config/autoloads")
        require "digest"
        features = $LOADED_FEATURES.select { |f| f.start_with?("#{app}/") }.map { |f| f.delete_prefix("#{app}/") }
        puts "digest=#{Digest::SHA256.hexdigest([features, locales, data, AUTOLOADED.size].inspect)} features=#{features.size}"
        puts "stats objects=#{GC.stat(:total_allocated_objects)} gc=#{GC.count}"
      RUBY
      private_constant :BUNDLER_BOOT

      # The unbundled entry point: no Bundler. RubyGems' require stays; the app puts every gem's
      # and component's lib dir at the front of $LOAD_PATH (ahead of RubyGems' insert index) and
      # its Zeitwerk dirs on $LOAD_PATH, then the boot cache, then the boot (as BUNDLER_BOOT).
      UNBUNDLED_BOOT = <<~'RUBY'
        # frozen_string_literal: true

        app = __dir__
        cache = ENV.fetch("BENCH_CACHE", File.join(app, "tmp/cache"))
        home = File.join(app, "gemhome")
        Gem.paths = { "GEM_HOME" => home, "GEM_PATH" => ([home] + Gem.path).uniq.join(File::PATH_SEPARATOR) }
        gems = File.read(File.join(app, "gems.txt")).split("\n")
        gems.reverse_each { |g| $LOAD_PATH.unshift(File.join(app, g, "lib")) }
        %w[models controllers services jobs mailers].each { |d| $LOAD_PATH.unshift(File.join(app, "app", d)) }
        layers = ENV.fetch("BENCH_LAYERS", "all")
        case ENV.fetch("BENCH_MODE", "plain")
        when "bootsnap"
          require "bootsnap"
          Bootsnap.setup(cache_dir: cache, development_mode: ENV["BENCH_DEV"] == "1",
                         load_path_cache: layers != "cc", compile_cache_iseq: layers != "lp",
                         compile_cache_yaml: layers != "lp", compile_cache_json: layers != "lp")
        when "loadout"
          require "loadout"
          Loadout.setup(cache_dir: cache, root: app, development_mode: ENV["BENCH_DEV"] == "1",
                        load_path_cache: layers != "cc", compile_cache: layers != "lp")
        when "floor"
          load ENV.fetch("BENCH_FLOOR_LIB")
          BootFloor.start(ENV.fetch("BENCH_FLOOR_PHASE"), cache)
        end
        require "zeitwerk"
        require "yaml"
        require "json"
        gems.each { |g| require File.basename(g).sub(/-1\.\d+\.0\z/, "") }
        locales = Dir[File.join(app, "config/locales/*.yml")].sort.map { |f| YAML.load_file(f) }
        data = Dir[File.join(app, "config/*.json")].sort.map { |f| JSON.load_file(f) }
        loader = Zeitwerk::Loader.new
        loader.push_dir(File.join(app, "app/models"))
        %w[controllers services jobs mailers].each { |d| loader.push_dir(File.join(app, "app", d)) }
        loader.setup
        loader.eager_load
        require File.join(app, "config/autoloads")
        require "digest"
        features = $LOADED_FEATURES.select { |f| f.start_with?("#{app}/") }.map { |f| f.delete_prefix("#{app}/") }
        puts "digest=#{Digest::SHA256.hexdigest([features, locales, data, AUTOLOADED.size].inspect)} features=#{features.size}"
        puts "stats objects=#{GC.stat(:total_allocated_objects)} gc=#{GC.count}"
      RUBY
      private_constant :UNBUNDLED_BOOT

      # The entry point generate writes (bench/boot.rb refreshes an older app's with it).
      def self.entry_point(layout:)
        { plain: BOOT, bundler: BUNDLER_BOOT, unbundled: UNBUNDLED_BOOT }.fetch(layout)
      end
    end
  end
end

# frozen_string_literal: true

require "open3"
require "rbconfig"

module Loadout
  module LoadPath
    # The $LOAD_PATH an app sees when `require "loadout/setup"` runs (right after
    # `require "bundler/setup"`), found without running any app code: a child Ruby with the
    # app's BUNDLE_GEMFILE loads bundler/setup and prints its $LOAD_PATH and the stable roots
    # Roots computes there (Gem.path and the bundle path are the app's, not the CLI's).
    #
    # What it cannot see: items the app's command line puts in front (`ruby -I dir`), and items
    # a boot adds before requiring loadout/setup. The boot record ("lp/boot", written by a boot
    # that writes anything) has those; `loadout check` and `precompile` use it when present.
    module Probe # :nodoc:
      GEMFILES = [%w[Gemfile Gemfile.lock], %w[gems.rb gems.locked]].freeze
      # It also prints the Ruby files loaded at that point (RubyGems', Bundler's): the app's boot
      # loads them before loadout's setup too.
      SCRIPT = <<~RUBY
        items = $LOAD_PATH.map { |p| p.is_a?(String) ? p : "#<\#{p.class}>" }
        loaded = $LOADED_FEATURES.select { |f| f.start_with?("/") && f.end_with?(".rb") }
        require ARGV[0]
        $stdout.binmode
        $stdout.write(Marshal.dump([items, Loadout::LoadPath::Roots.new.stable, loaded]))
      RUBY

      Answer = Struct.new(:load_path, :stable_roots, :loaded, :error, keyword_init: true)

      class << self
        # The app's Gemfile and lockfile under +root+ ([nil, nil] when the app has none).
        #: (String) -> [String?, String?]
        def gemfile(root)
          found = GEMFILES.find { |(g, _)| File.file?(File.join(root, g)) } or return [nil, nil]
          found.map { |f| File.join(root, f) }
        end

        # Runs the child in +root+ with the caller's environment plus BUNDLE_GEMFILE. Returns a
        # Answer; +error+ is a one-line reason when the bundle could not be set up.
        #: (String) -> Answer
        def call(root)
          gemfile, = gemfile(root)
          env = {}
          args = []
          if gemfile
            env["BUNDLE_GEMFILE"] = gemfile
            args << "-rbundler/setup"
          end
          roots_file = File.expand_path("roots.rb", __dir__)
          out, err, status = Open3.capture3(env, RbConfig.ruby, *args, "-e", SCRIPT, roots_file,
                                            chdir: root, binmode: true)
          unless status.success?
            line = err.lines.reject { |l| l.strip.empty? }.last.to_s.strip
            return Answer.new(error: "#{gemfile ? "bundler/setup" : "ruby"} failed in #{root}: #{line[0, 300]}")
          end

          load_path, stable, loaded = Marshal.load(out) # rubocop:disable Security/MarshalLoad -- our own child's output
          Answer.new(load_path: load_path, stable_roots: stable, loaded: loaded)
        rescue SystemCallError, StandardError, TypeError => e
          Answer.new(error: "could not ask Ruby for the app's $LOAD_PATH (#{e.class}: #{e.message})")
        end
      end
    end
  end
end

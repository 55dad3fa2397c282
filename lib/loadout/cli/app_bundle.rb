# frozen_string_literal: true

require "open3"
require "rbconfig"

module Loadout
  class CLI
    # The app's bundle as its boot sees it right after `require "bundler/setup"`: Gem.path and
    # $LOAD_PATH. The compile cache keys a file relative to the deepest of its roots (the app
    # root, every Gem.path dir, Ruby's prefix), so a gem file under vendor/bundle is keyed under
    # its gem dir by a boot, but under the app root by a CLI that runs outside the bundle: every
    # entry precompile wrote would be a key no boot asks for. So precompile and check use the
    # app's Gem.path, not their own.
    #
    # This process's own values when it runs under the app's bundle (`bundle exec loadout`);
    # else a child `ruby -rbundler/setup` with the app's BUNDLE_GEMFILE (no app code runs).
    class AppBundle # :nodoc:
      SCRIPT = <<~RUBY
        $stdout.binmode
        $stdout.write(Marshal.dump([Gem.path.map(&:to_s), $LOAD_PATH.map(&:to_s)]))
      RUBY

      Paths = Struct.new(:gem_path, :load_path, :error, keyword_init: true)

      class << self
        #: (String) -> Paths
        def call(root)
          gemfile = %w[Gemfile gems.rb].map { |g| File.join(root, g) }.find { |f| File.file?(f) }
          return own unless gemfile
          return own if own_bundle?(gemfile)

          out, err, status = Open3.capture3({ "BUNDLE_GEMFILE" => gemfile }, RbConfig.ruby, "-rbundler/setup",
                                            "-e", SCRIPT, chdir: root, binmode: true)
          unless status.success?
            line = err.lines.reject { |l| l.strip.empty? }.last.to_s.strip[0, 300]
            return own.tap { |r| r.error = "bundler/setup failed in #{root}: #{line}" }
          end

          gem_path, load_path = Marshal.load(out) # rubocop:disable Security/MarshalLoad -- our own child's output
          Paths.new(gem_path: gem_path, load_path: load_path)
        rescue StandardError, TypeError => e
          own.tap { |r| r.error = "could not ask Ruby for the app's bundle (#{e.class}: #{e.message})" }
        end

        private

        def own
          Paths.new(gem_path: Gem.path.map(&:to_s), load_path: $LOAD_PATH.map(&:to_s))
        end

        # Bundler is set up in this process, for this Gemfile.
        def own_bundle?(gemfile)
          return false unless defined?(::Bundler) && $LOADED_FEATURES.any? { |f| f.end_with?("/bundler/setup.rb") }

          File.expand_path(ENV["BUNDLE_GEMFILE"].to_s) == File.expand_path(gemfile)
        end
      end
    end
  end
end

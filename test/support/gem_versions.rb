# frozen_string_literal: true

require "rbconfig"
require "open3"

module Loadout
  module TestSupport
    # Real gems at exact versions for differential tests (every Zeitwerk the mirror has for this
    # Ruby), installed once from the RubyGems mirror into tmp/gems (never committed) with one
    # `gem install`, outside the suite's own bundle.
    module GemVersions
      DIR = File.expand_path("../../tmp/gems", __dir__)

      # Zeitwerk 2.6.x is the line that runs on Ruby 3.1; 2.7+ needs Ruby 3.2.
      ZEITWERK = if RUBY_VERSION < "3.2"
                   (0..18).map { |p| "2.6.#{p}" }
                 else
                   ["2.6.18", "2.7.5", "2.8.3"]
                 end.freeze

      class << self
        # The lib dir of +name+ at +version+, installing every +versions+ of it first if needed.
        def lib(name, version, versions: [version])
          path = lib_path(name, version)
          install(name, versions) unless File.directory?(path)
          raise "#{name} #{version} did not install into #{DIR}" unless File.directory?(path)

          path
        end

        private

        def lib_path(name, version)
          File.join(DIR, "gems", "#{name}-#{version}", "lib")
        end

        def install(name, versions)
          missing = versions.reject { |v| File.directory?(lib_path(name, v)) }
          return if missing.empty?

          env = { "BUNDLE_GEMFILE" => nil, "RUBYOPT" => nil, "BUNDLER_SETUP" => nil,
                  "GEM_HOME" => DIR, "GEM_PATH" => DIR }
          args = [RbConfig.ruby, "-S", "gem", "install", *missing.map { |v| "#{name}:#{v}" }, "--install-dir", DIR,
                  "--no-document", "--ignore-dependencies"]
          out, status = Open3.capture2e(env, *args)
          raise "gem install #{name} #{missing.join(", ")} failed:\n#{out}" unless status.success?
        end
      end
    end
  end
end

# frozen_string_literal: true

require "rbconfig"

module Loadout
  module TestSupport
    # Assertions on `loadout check`'s report.
    module CheckOutput
      BEFORE_SETUP = Regexp.new('^  loaded before setup \(not served by loadout; the next boot loads them the same ' \
                                'way\): (\d+) files? \((.*)\)$')

      # The "loaded before setup" line names +app_files+ first, in that order, and otherwise only
      # Ruby's own files (Ruby 3.3's Bundler loads bundled_gems.rb before any app code).
      def assert_loaded_before_setup(out, *app_files)
        match = out.match(BEFORE_SETUP)
        assert match, "no \"loaded before setup\" line:\n#{out}"
        listed = match[2].split(", ")
        assert_equal match[1].to_i, listed.size, match[0]
        assert_equal app_files, listed.first(app_files.size), match[0]
        ruby_lib = RbConfig::CONFIG["rubylibdir"]
        extra = listed.drop(app_files.size)
        assert extra.all? { |f| f.start_with?("#{ruby_lib}/") }, "only Ruby's own files besides the app's: #{extra}"
      end
    end
  end
end

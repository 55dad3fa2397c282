# frozen_string_literal: true

require "open3"
require "rbconfig"

module Loadout
  module TestSupport
    # Boots a real Ruby: anything touching require is proven in a child process.
    module Subprocess
      LIB = File.expand_path("../../lib", __dir__)

      Result = Struct.new(:stdout, :stderr, :status) do
        def success?
          status.success?
        end
      end

      # Runs +script+ with the repo's lib on the load path; returns a Result.
      def run_ruby(script, args: [], env: {}, chdir: nil, ruby_opts: [])
        opts = {}
        opts[:chdir] = chdir if chdir
        out, err, status = Open3.capture3(env, RbConfig.ruby, "-I", LIB, *ruby_opts, "-e", script, *args, **opts)
        Result.new(out, err, status)
      end

      # Like run_ruby, but fails the test (showing everything the child printed) unless it succeeded.
      def run_ruby!(script, **kw)
        result = run_ruby(script, **kw)
        assert result.success?, "child ruby failed (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
        result
      end
    end
  end
end

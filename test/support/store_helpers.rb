# frozen_string_literal: true

require "timeout"

module Loadout
  module TestSupport
    # Helpers shared by test/store and test/journal.
    module StoreHelpers
      # Writes +count+ records (one overwritten, one deleted). Returns [final, history]: the
      # {key => value} a correct reader serves, and {key => [every value ever put]}.
      def write_small_store(path, count: 6)
        final = {}
        history = Hash.new { |h, k| h[k] = [] }
        Loadout::Store.open(path) do |s|
          count.times do |i|
            key = "key-#{i}"
            value = "value-#{i}-" + ("x" * (i * 3))
            s.put(key, value)
            final[key] = value
            history[key] << value
          end
          s.put("key-1", "rewritten")
          final["key-1"] = "rewritten"
          history["key-1"] << "rewritten"
          s.delete("key-2")
          final.delete("key-2")
        end
        File.unlink("#{path}.hint") if File.exist?("#{path}.hint")
        [final, history]
      end

      # Every value a store at +path+ serves, checked against the values ever written.
      def assert_serves_only_written(path, written, **open_opts)
        store = Loadout::Store.open(path, **open_opts)
        store.each do |key, value|
          assert written.key?(key), "served a key that was never written: #{key.inspect}"
          assert_includes written[key], value, "served a value never written for #{key.inspect}"
        end
        written.each_key do |key|
          value = store.get(key)
          assert_includes written[key], value, "get(#{key.inspect}) returned #{value.inspect}" unless value.nil?
        end
        store
      end

      # Runs the block in a forked child; returns its Process::Status (the child is killed after
      # +timeout+ seconds, which fails the test).
      def in_child(timeout: 30, &block)
        # What runs in a forked child (fork safety, privilege drops) does not exist without fork.
        skip "no fork on #{RUBY_ENGINE}" unless Process.respond_to?(:fork)
        pid = fork do
          block.call
          exit!(0)
        rescue Exception => e # rubocop:disable Lint/RescueException
          warn "child failed: #{e.class}: #{e.message}\n#{e.backtrace.first(8).join("\n")}"
          exit!(1)
        end
        status = nil
        begin
          Timeout.timeout(timeout) { _, status = Process.wait2(pid) }
        rescue Timeout::Error
          Process.kill(:KILL, pid)
          Process.wait(pid)
          flunk "child #{pid} did not finish in #{timeout}s"
        end
        status
      end

      # Whether `unshare -r -m` can mount a tmpfs here (user + mount namespaces).
      def unshare_mount_works?
        return @unshare_mount_works if defined?(@unshare_mount_works)

        out = IO.popen(["unshare", "-r", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && echo ok"],
                       err: File::NULL, &:read)
        @unshare_mount_works = out.to_s.include?("ok")
      rescue SystemCallError
        @unshare_mount_works = false
      end

      # Runs a Ruby script inside a private mount namespace with a tiny tmpfs mounted at MNT (the
      # script sees it as ENV["MNT"]). +setup+ is extra shell run after the mount.
      def run_in_tmpfs(script, size: "128k", setup: "", env: {})
        Dir.mktmpdir("loadout-mnt") do |mnt|
          shell = "mount -t tmpfs -o size=#{size} tmpfs #{mnt} && #{setup} exec \"$0\" \"$@\""
          cmd = ["unshare", "-r", "-m", "sh", "-c", shell, RbConfig.ruby, "-I", Subprocess::LIB, "-e", script]
          out, err, status = Open3.capture3({ "MNT" => mnt }.merge(env), *cmd)
          Subprocess::Result.new(out, err, status)
        end
      end
    end
  end
end

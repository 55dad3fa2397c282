# frozen_string_literal: true

require "tmpdir"
require "support/subprocess"

module Loadout
  module TestSupport
    # Boots child Rubies with the compile cache installed on a real Loadout::Store, and hands
    # back what they printed plus CompileCache.stats and every instrumentation event.
    module CompileCacheBoot
      Boot = Struct.new(:stdout, :stderr, :status, :stats, :events) do
        def count(kind, field)
          stats.fetch(kind).fetch(field)
        end

        def events_of(event)
          events.select { |e| e[0] == event }
        end
      end

      # +body+ is Ruby run after install! (require the files under test there).
      # +racy_ns+: Freshness's racy window; tests write files and boot at once, so the
      # default trusts a fresh ctime (the racy rule itself has its own test).
      def cc_boot(store:, roots:, body:, install: "", readonly: false, ruby_opts: [], env: {}, racy_ns: 0, chdir: nil)
        Dir.mktmpdir("loadout-cc-boot") do |tmp|
          out = File.join(tmp, "stats")
          script = <<~RUBY
            require "loadout"
            require "loadout/store"
            require "loadout/compile_cache"
            $cc_events = []
            Loadout.instrumentation = ->(event, path, **info) { $cc_events << [event, path, info] }
            store = Loadout::Store.open(#{store.dump}, readonly: #{readonly}, fail_safe: true, defer_writes: true)
            at_exit { File.binwrite(#{out.dump}, Marshal.dump([Loadout::CompileCache.stats, $cc_events])) }
            Loadout::CompileCache.install!(store: store, roots: #{roots.inspect}, readonly: #{readonly},
                                           racy_ns: #{Integer(racy_ns)}#{install})
            at_exit { Loadout::CompileCache.finish! } # (Loadout.setup's exit does this)
            #{body}
          RUBY
          result = run_ruby(script, env: env, ruby_opts: ruby_opts, chdir: chdir)
          stats, events = File.exist?(out) ? Marshal.load(File.binread(out)) : [nil, nil] # rubocop:disable Security/MarshalLoad
          assert stats, "child wrote no stats (#{result.status}):\n#{result.stdout}\n#{result.stderr}"
          Boot.new(result.stdout, result.stderr, result.status, stats, events)
        end
      end

      # The same +body+ in plain Ruby (no loadout at all), for differential comparisons.
      def plain_boot(body, ruby_opts: [], env: {}, chdir: nil)
        result = run_ruby(body, env: env, ruby_opts: ruby_opts, chdir: chdir)
        Boot.new(result.stdout, result.stderr, result.status, nil, nil)
      end

      # Keys of the stored values of one kind ("i", "y", "j") in the store at +path+.
      def cc_keys(path, letter)
        Loadout::Store.open(path, readonly: true) { |s| s.each.map { |k, _v| k }.select { |k| k.start_with?("cc/#{letter}/") } }
      end
    end
  end
end

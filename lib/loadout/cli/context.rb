# frozen_string_literal: true

require_relative "../trust"

module Loadout
  class CLI
    # What every command needs: the settings the environment gives (through Setup, the one place
    # that reads LOADOUT_*), a --cache-dir override, and the store. :nodoc:
    class Context # :nodoc:
      attr_reader :config, :help

      def initialize(env, cache_dir, help)
        base = Env.config_from(env) || Env.config_from(env.to_h.merge("LOADOUT_DISABLE" => "0"))
        opts = base.to_h
        opts[:cache_dir] = cache_dir if cache_dir
        @config = Config.new(**opts)
        @help = help
      end

      def store_path
        config.store_path
      end

      def store_exists?
        File.file?(store_path)
      end

      # Opens the store (readonly unless +write+). Raises Loadout::Error with a readable message
      # when the store component is missing; the caller reports it.
      def open_store(write: false)
        klass = Boot.component(:Store)
        raise Error, "this build of loadout has no store (lib/loadout/store.rb is missing)" unless klass

        Trust.make_dirs(config.cache_dir, config.trust_shared_cache) if write
        # Stores hold Marshal data and ISeqs: one that fails the trust rule is not read here either.
        report = Trust.walk(config.cache_dir, config.root, config.trust_shared_cache)
        if report && !Trust.unusable?(report)
          raise Error, "the cache in #{config.cache_dir} is not used: #{Trust::Words.problem(report)}; fix: " \
                       "#{Trust::Words.fix(report, config.trust_shared_cache)}"
        end
        klass.open(store_path, readonly: !write, fail_safe: false, defer_writes: write,
                               trust_shared_cache: config.trust_shared_cache)
      end

      # Raises Loadout::Error with one message naming the cache dir and the fix when +command+
      # could not write there: checked once, up front, so no worker and no half-done step
      # prints a raw Errno instead. A missing cache dir is made as a boot makes it (Trust's
      # modes: 0700, or 0750 with trust_shared_cache, whatever the umask), parents included.
      def writable!(command)
        dir = config.cache_dir
        Trust.make_dirs(dir, config.trust_shared_cache)
        target = [store_path, dir].find { |path| File.exist?(path) && !File.writable?(path) }
        return unless target

        raise Error, "#{command}: #{target} is not writable by this user (#{owner(target)}); fix: run as that " \
                     "user, make it writable, or give --cache-dir / LOADOUT_CACHE_DIR another directory"
      rescue SystemCallError => e
        raise Error, "#{command}: cannot create the cache dir #{dir} (#{e.message.sub(/ @ .*/, "")}); " \
                     "fix: create it writable for this user, or give --cache-dir / LOADOUT_CACHE_DIR another directory"
      end

      def with_store(write: false)
        store = open_store(write: write)
        yield store
      ensure
        store&.close
      end

      private

      def owner(path)
        stat = File.stat(path)
        name = begin
          require "etc"
          Etc.getpwuid(stat.uid)&.name
        rescue StandardError
          nil
        end
        format("owner %s, mode %o", name || stat.uid, stat.mode & 0o7777)
      rescue SystemCallError
        "cannot stat it"
      end
    end
  end
end

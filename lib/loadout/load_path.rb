# frozen_string_literal: true

require_relative "native"
require_relative "instrumentation"
require_relative "config"
require_relative "load_path/require_hook"
require_relative "load_path/rubygems_front"
require_relative "load_path/bundled_gems_front"
require_relative "load_path/boot_record"
require_relative "load_path/codec"
require_relative "load_path/load_dir"
require_relative "load_path/index"
require_relative "load_path/lister"
require_relative "load_path/roots"
require_relative "load_path/state"
# The Ruby twins: loaded with the pure backend; with the C one only when named (tests compare).
%w[loaded_features observer ruby_hook ruby_index].each do |file|
  if Loadout::BACKEND == :native
    name = file.split("_").map(&:capitalize).join.to_sym
    Loadout::LoadPath.autoload(name, File.expand_path("load_path/#{file}", __dir__))
  else
    require_relative "load_path/#{file}"
  end
end

module Loadout
  # The load path index: require's $LOAD_PATH search answered from a listing of every
  # $LOAD_PATH directory, with Ruby's exact precedence. Listings persist in the Store (one per
  # directory, see Codec), so a warm boot lists no directory and stats no gem directory; the
  # table over them is rebuilt in C whenever $LOAD_PATH changes (Rails engines reorder it), at
  # one hash probe per file. A feature no listing holds raises Ruby's LoadError after checking
  # only the app directories that could have gained it. How the hook composes with every other
  # require decorator: see RequireHook.
  #
  #   Loadout::LoadPath.install!(store: store)
  #   Loadout::LoadPath.find("json")  # => "/usr/lib/ruby/3.1.0/json.rb"
  #   Loadout::LoadPath.stats         # => { requires: 812, hits: 640, restore_ms: 1.2, ... }
  module LoadPath
    # Only `loadout check` / `precompile` use these: loaded when named, by absolute path.
    autoload :AppLoadPath, File.expand_path("load_path/app_load_path", __dir__)
    autoload :ListingChecker, File.expand_path("load_path/listing_checker", __dir__)
    autoload :Probe, File.expand_path("load_path/probe", __dir__)

    LOCKFILES = %w[Gemfile.lock gems.locked].freeze
    @state = nil
    @boot = nil

    class << self
      # Lists or restores every $LOAD_PATH directory and puts the hook in place of Ruby's
      # require (see RequireHook). +trust+: nil/:stable (default: stable dirs used as stored,
      # app dirs checked against dir mtimes), :all (nothing checked: immutable images), :none
      # (check stable dirs too). +development_mode+ is accepted for compatibility: a miss
      # always re-checks the app directories that could hold the file, in every mode. +root+: the
      # app root, under which listings are also kept relative to it (a copy of the app at another
      # path starts from them: see Lister).
      #: (?store: untyped, ?development_mode: bool, ?ignore_directories: Array[String], ?trust: Symbol?, ?root: String?) -> void
      def install!(store: nil, development_mode: false, ignore_directories: ["node_modules"], trust: nil, root: nil)
        validate!(store, development_mode, ignore_directories, trust)
        uninstall!
        return unsupported unless supported?

        ignore = frozen_list(ignore_directories)
        roots = Roots.new
        state = State.new(lister: Lister.new(store: store, roots: roots, ignore: ignore, trust: trust, app_root: root),
                          roots: roots, ignore: ignore)
        @boot = { items: $LOAD_PATH.map { |p| BootRecord.item_of(p) }, roots: roots,
                  loaded: [$LOADED_FEATURES.size, caller_locations.map(&:absolute_path)] }
        Index.reset_counters
        state.boot!
        RequireHook.install!
        RubyGemsFront.install!
        BundledGemsFront.install!
        Instrumentation.__watch { |on| Index.instrument(on) } unless @watching
        @watching = true
        @state = state
        nil
      rescue ConfigError
        raise
      rescue StandardError => e
        uninstall!
        warn "loadout: load path index disabled (#{e.class}: #{e.message}); using plain require"
        nil
      end

      # Back to plain Ruby behaviour: the hook stays in place and is Ruby's require again.
      def uninstall!
        Index.activate(nil, nil) if @state
        @state = nil
      end

      def installed?
        !@state.nil?
      end

      # The index needs Ruby's C require to sit under (CRuby). On other engines require is
      # theirs (JRuby loads jars and classpath entries through it) and the index stays off.
      def supported?
        RUBY_ENGINE == "ruby"
      end

      # Returns the file require would load for +feature+ (nil if none, unknown, or not installed).
      #: (String) -> String?
      def find(feature)
        @state&.find(feature)
      end

      # Counters for the stats printer: requires, hits, misses, fallbacks (and per reason),
      # already_loaded, rescans (directories listed), revalidated (app directories of a copy of
      # the app elsewhere, listed again and holding the files a listing made there holds),
      # restored_entries (listings used as stored), restored (every listing came from the
      # store), restore_ms; with RubyGems' require in place (RubyGemsFront): front (of those
      # requires, the ones answered above RubyGems), rubygems (handed to RubyGems' own require),
      # gem_walks (default-gem walks answered).
      #: () -> Hash[Symbol, untyped]
      def stats
        state = @state or return {}
        counts = Index::COUNTERS.zip(Index.counters).to_h
        reasons = Index::FALLBACKS.to_h { |r| [r, counts[r]] }.reject { |_, n| n.zero? }
        lister = state.lister
        { restore_ms: state.restore_ms, requires: counts[:requires], hits: counts[:hits], misses: counts[:misses],
          fallbacks: reasons.values.sum, fallback_reasons: reasons, already_loaded: counts[:already_loaded],
          rescans: lister.scanned, revalidated: lister.revalidated, restored_entries: lister.restored,
          restored: lister.scanned.zero? && lister.revalidated.zero? && lister.restored.positive? }
          .merge(%i[front rubygems gem_walks].to_h { |k| [k, counts[k]] }.reject { |_, n| n.zero? })
      end

      # Says what the next boot whose $LOAD_PATH is +load_path+ (at `require "loadout/setup"`)
      # will do with the listings in +store+, without changing anything: :hit (every directory
      # restored as stored), :stale (some are listed again, with the directory that changed),
      # :miss (some have no stored listing). +later+: absolute items the app adds after boot.
      #: (store: untyped, load_path: Array[String], ?ignore_directories: Array[String], ?trust: Symbol?, ?stable_roots: Array[String]?, ?later: Array[String], ?root: String?) -> Hash[Symbol, untyped]
      def check(store:, load_path:, ignore_directories: ["node_modules"], trust: nil, stable_roots: nil, later: [],
                root: nil)
        raise ConfigError.new("store", store, "a Loadout::Store") if store.nil?

        validate!(store, false, ignore_directories, trust)
        lister = Lister.new(store: store, roots: Roots.new(stable_roots), ignore: frozen_list(ignore_directories),
                            trust: trust, app_root: root)
        ListingChecker.new(lister).call(load_path, later)
      end

      # Lists and stores every directory of +load_path+ and +extra+ (dirs the app may add after
      # boot) that has no usable stored listing, with the app's +stable_roots+. Returns
      # { restored: (nothing needed listing), listed: count }.
      #: (store: untyped, load_path: Array[String], ?ignore_directories: Array[String], ?trust: Symbol?, ?stable_roots: Array[String]?, ?extra: Array[String], ?root: String?) -> Hash[Symbol, untyped]
      def precompile(store:, load_path:, ignore_directories: ["node_modules"], trust: nil, stable_roots: nil, extra: [],
                     root: nil)
        validate!(store, false, ignore_directories, trust)
        lister = Lister.new(store: store, roots: Roots.new(stable_roots), ignore: frozen_list(ignore_directories),
                            trust: trust, app_root: root)
        (load_path + extra).uniq.each do |item|
          next unless item.is_a?(String) && !item.empty?

          dir = lister.load_dir(item)
          lister.fill(dir) unless dir.opaque?
        end
        { restored: lister.scanned.zero?, listed: lister.scanned }
      end

      # The app's lockfile under +root+ and its digest ([path, digest]), or nil: the boot
      # record carries it, so a record made with another bundle is not trusted.
      #: (String?) -> [String, String]?
      def lock_stamp(root)
        return nil unless root

        path = LOCKFILES.map { |name| File.join(root, name) }.find { |f| File.file?(f) } or return nil
        [path, BootRecord.digest(File.binread(path))]
      rescue SystemCallError
        nil
      end

      # Records this boot's $LOAD_PATH in +store+ (Boot calls it at exit, only when the boot
      # records anything: a warm boot that hit writes nothing). +root+: the app root.
      def __record_boot(store, root) # :nodoc:
        boot = @boot or return
        return unless @state

        known = boot[:items].to_h { |p| [p, true] }
        later = $LOAD_PATH.select { |p| p.is_a?(String) && p.start_with?("/") && !known.key?(p) }
        BootRecord.save(store, { load_path: boot[:items], stable_roots: boot[:roots].stable,
                                 later: later.uniq.first(BootRecord::KEEP_LATER), lock: lock_stamp(root),
                                 before: loaded_before(boot[:loaded]) })
      end

      def __state # :nodoc:
        @state
      end

      # Every part is loaded with this file (require_relative: by absolute path, and without a
      # call through Kernel#require that an earlier decorator would see). Kept for callers that
      # want the cost paid up front.
      def __load_parts # :nodoc:
        [State, Lister, LoadDir, Codec, Index, Roots, BootRecord, RequireHook, RubyGemsFront, BundledGemsFront]
      end

      private

      def unsupported
        if Instrumentation.enabled?
          Instrumentation.emit(:fallback, nil, cache: :load_path, reason: :"unsupported_#{RUBY_ENGINE}")
        end
        nil
      end

      # The Ruby files loaded before install: the files still being loaded (the main script,
      # config/boot.rb: the call stack), then what $LOADED_FEATURES held. loadout never serves
      # them and the next boot loads them the same way, so `loadout check` must not count them
      # as misses.
      def loaded_before((count, stack))
        loading = stack.reverse.select { |f| f.is_a?(String) && f.start_with?("/") } # main script first
        features = $LOADED_FEATURES.first(count)
        list = loading + features.select { |f| f.is_a?(String) && f.start_with?("/") && f.end_with?(".rb") }
        list.uniq.first(BootRecord::KEEP_BEFORE)
      end

      def frozen_list(dirs)
        dirs.map { |d| d.dup.freeze }.freeze
      end

      def validate!(store, development_mode, ignore_directories, trust)
        unless [true, false].include?(development_mode)
          raise ConfigError.new("development_mode", development_mode, "true or false")
        end
        unless ignore_directories.is_a?(Array) && ignore_directories.all?(String)
          raise ConfigError.new("ignore_directories", ignore_directories,
                                "an Array of directory names or absolute paths")
        end
        raise ConfigError.new("trust", trust, Config.trust_levels_text) unless Config::TRUST_LEVELS.include?(trust)

        %i[get put delete key? writable?].each do |m|
          next if store.nil? || store.respond_to?(m)

          raise ConfigError.new("store", store, "nil or a Loadout::Store (missing ##{m})")
        end
      end
    end
  end
end

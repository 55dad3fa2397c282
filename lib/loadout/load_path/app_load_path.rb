# frozen_string_literal: true

module Loadout
  module LoadPath
    # Which $LOAD_PATH `loadout check` and `loadout precompile` work for: the app's, never the
    # CLI's own. Two sources:
    # - the boot record ("lp/boot"): exactly what the last boot that wrote the cache saw, -I
    #   items and items added after boot included; used while the app's lockfile is the one it
    #   was recorded with (a changed bundle means a changed $LOAD_PATH);
    # - Probe: a child `ruby -rbundler/setup` with the app's BUNDLE_GEMFILE (no app code runs),
    #   which is what config/boot.rb sees when it requires loadout/setup.
    module AppLoadPath # :nodoc:
      # +before+: Ruby files the app's boot loads before loadout's setup (loadout never serves
      # them): the record's (main script, boot file, what Bundler loaded), and with the probe
      # also what `ruby -rbundler/setup` loaded.
      Target = Struct.new(:load_path, :stable_roots, :later, :before, :source, :error, keyword_init: true)
      # Dirs an app commonly puts on $LOAD_PATH after boot (Rails' lib and vendor, its app/*
      # autoload paths before 7.1, test runners' test/ and spec/): precompile stores their
      # listings too.
      CONVENTIONAL = %w[lib vendor test spec].freeze
      APP_SKIP = %w[assets javascript views].freeze

      class << self
        # The one $LOAD_PATH `check` answers for: the record when usable, else the probe's.
        #: (untyped, String) -> Target
        def for_check(store, root)
          record = BootRecord.load(store)
          why = record && stale_record(record, root)
          return from_record(record) if record && why.nil?

          probe = Probe.call(root)
          return Target.new(error: probe.error) if probe.error

          from_probe(probe, root, record, why)
        end

        # Every $LOAD_PATH precompile builds an index for (the record's, the probe's; duplicates
        # dropped), the dirs whose listings it stores, and the reasons a source was not used.
        #: (untyped, String) -> [Array[Target], Array[String], Array[String]]
        def for_precompile(store, root)
          record = BootRecord.load(store)
          why = record && stale_record(record, root)
          targets = []
          notes = []
          targets << from_record(record) if record && why.nil?
          notes << "last boot's $LOAD_PATH not used: #{why}" if why
          probe = Probe.call(root)
          if probe.error
            notes << probe.error
          else
            target = from_probe(probe, root, record, why)
            same = targets.any? { |t| t.load_path == target.load_path && t.stable_roots == target.stable_roots }
            targets << target unless same
          end
          extra = (record ? record[:later] : []) + conventional_dirs(root)
          [targets, extra.uniq, notes]
        end

        private

        def from_record(record)
          Target.new(load_path: record[:load_path], stable_roots: record[:stable_roots], later: record[:later],
                     before: record[:before] || [],
                     source: "as the last boot that wrote the cache saw it (#{record[:load_path].size} items)")
        end

        def from_probe(probe, root, record, why)
          gemfile, = Probe.gemfile(root)
          how = if gemfile
                  "`ruby -rbundler/setup` with BUNDLE_GEMFILE=#{gemfile}"
                else
                  "plain `ruby` in #{root} (no Gemfile)"
                end
          # A record for another bundle still names the app's own boot files.
          before = ((record && record[:before]) || []) | (probe.loaded || [])
          notes = "#{"; the recorded one is not used: #{why}" if why}#{"; no boot recorded yet" unless record}"
          Target.new(load_path: probe.load_path, stable_roots: probe.stable_roots, later: record ? record[:later] : [],
                     before: before, source: "#{how} (#{probe.load_path.size} items)#{notes}")
        end

        # Why the record no longer describes the next boot (nil when it does): the bundle it
        # was recorded with is not the app's current one.
        def stale_record(record, root)
          recorded = record[:lock]
          return nil if recorded.nil? && LoadPath.lock_stamp(root).nil? # no bundle then or now
          return "it was recorded without a lockfile, the app now has one" if recorded.nil?

          now = LoadPath.lock_stamp(root)
          unless now && now[0] == recorded[0]
            return "it was recorded with #{recorded[0]}, the app's lockfile is #{now ? now[0] : "missing"}"
          end
          return "#{File.basename(recorded[0])} changed since it was recorded" unless now == recorded

          nil
        end

        def conventional_dirs(root)
          dirs = CONVENTIONAL.map { |d| File.join(root, d) }
          app = File.join(root, "app")
          if File.directory?(app)
            dirs.concat(Dir.children(app).sort.reject { |c| APP_SKIP.include?(c) }.map { |c| File.join(app, c) })
          end
          dirs.select { |d| File.directory?(d) }
        rescue SystemCallError
          []
        end
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  class CLI
    # The load-path half of `loadout precompile`: builds and persists the load-path index for the
    # app's $LOAD_PATH (the last boot's, and the bundle's as a child `ruby -rbundler/setup` sees
    # it: see LoadPath::AppLoadPath), not for this process's, plus the listings of dirs the app
    # adds after boot.
    module PrecompileIndex # :nodoc:
      # Returns a short description for precompile's summary line; notes about the $LOAD_PATH
      # sources go to +err+.
      def self.build(ctx, err)
        return "load-path index off" unless ctx.config.load_path_cache
        if (why = Boot.unsupported(:load_path))
          return "load-path index off (#{why})"
        end

        lp = Boot.component(:LoadPath) or return "load-path index not available in this build"
        unless lp.respond_to?(:precompile)
          return "load-path index not built (this build's load-path index has no precompile)"
        end

        opts = { ignore_directories: ctx.config.ignore_directories, trust: ctx.config.trust }
        ctx.with_store(write: true) do |store|
          targets, extra, notes = lp::AppLoadPath.for_precompile(store, ctx.config.root)
          notes.each { |n| err.puts "loadout precompile: #{n}" }
          return "load-path index not built (#{notes.last})" if targets.empty?

          # The last call also lists the dirs a boot adds later (it knows the app's stable roots).
          built = targets.each_with_index.map do |t, i|
            lp.precompile(store: store, load_path: t.load_path, stable_roots: t.stable_roots,
                          extra: i == targets.size - 1 ? extra : [], root: ctx.config.root, **opts)
          end
          store.flush
          sizes = targets.map { |t| t.load_path.size }.join(" + ")
          fresh = built.count { |b| !b[:restored] }
          "load-path index for the app's $LOAD_PATH (#{sizes} items: #{fresh} built, #{targets.size - fresh} " \
            "already stored; #{built.sum { |b| b[:listed] }} dirs listed, #{extra.size} added-later dirs covered)"
        end
      end
    end
  end
end

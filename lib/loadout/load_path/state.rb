# frozen_string_literal: true

module Loadout
  module LoadPath
    # The installed index's Ruby side: which listing stands for each $LOAD_PATH item, and the
    # table built from them. The require hook (require_native.c, or RubyHook) answers from the
    # table alone and calls back only when it cannot:
    # - __refresh: $LOAD_PATH changed since the table was built (or a load dir was found stale);
    # - __miss:    a feature no listing holds: the app directories that could have gained it
    #              since they were listed are checked (one stat each); a changed one is listed
    #              again and the hook retries, so a file created while the process runs is found
    #              as plain Ruby finds it;
    # - __stale:   a listed file Ruby could not open: the dirs holding it are listed again;
    # - __walk:    RubyGems' default-gem walk is to be answered (the front hook, see
    #              RubyGemsFront): how each $LOAD_PATH item looks to it;
    # - __event:   instrumentation, only while someone listens.
    # Listings come from the store (Codec) or from a scan, which is then stored (Lister).
    class State # :nodoc:
      attr_reader :restore_ms, :dirs, :lister

      def initialize(lister:, roots:, ignore:)
        @lister = lister
        @roots = roots
        @ignore = ignore
        @ignore_names = ignore.reject { |i| i.start_with?("/") }.freeze
        @dirs = {}      # $LOAD_PATH item -> LoadDir, for this process's life
        @order = []     # the load dirs of the current table, in its order
        @positions = [] # the $LOAD_PATH index of each position of the current table
        @walk = nil     # [table, items, positions] for __walk, made for the current table
        @volatile = []
        @mutex = Mutex.new
        @restore_ms = 0.0
        @static_ext = !RbConfig::CONFIG["EXTSTATIC"].to_s.empty? # Ruby 3.3 resolves those in C
      end

      # Builds the first table (timed: the restore figure of the stats) and activates the hook.
      def boot!
        t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        __refresh
        @restore_ms = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1000).round(3)
        self
      end

      # A require from inside the state's own work (the twin hook asks; the C hook keeps a flag).
      def busy?
        @mutex.owned?
      end

      def __refresh # :nodoc:
        @mutex.synchronize do
          snapshot = Index.snapshot
          listings = []
          bases = []
          order = []
          positions = []
          seen = {}
          @cwd = nil
          $LOAD_PATH.each_with_index do |item, index|
            dir = dir_for(item) or next
            @lister.fill(dir) unless dir.listing || dir.opaque?
            if dir.opaque?
              # Nothing found at or after this position is the index's to answer.
              listings << nil
              bases << nil
              positions << index
              break
            end
            # Ruby compares realpaths: a second item with the same one can never win.
            next if dir.empty? || seen.key?(dir.base)

            seen[dir.base] = true
            listings << dir.listing
            bases << dir.base
            order << dir
            positions << index
          end
          @order = order
          @positions = positions.freeze
          @walk = nil
          @volatile = order.select(&:volatile?)
          @table = Index.table(listings, bases)
          Index.activate(self, @table, @cwd, snapshot)
        end
        nil
      end

      # :retry after listing again an app directory that changed on the way to +feature+, :miss
      # when none did, :fallback when Ruby must search (a name under an ignored directory).
      def __miss(feature) # :nodoc:
        return :fallback if @static_ext || ignored?(feature)

        slash = feature.rindex("/")
        sub = slash ? feature[0, slash] : ""
        changed = @mutex.synchronize { Index.changed_dirs(@volatile, sub) }
        return :miss unless changed

        changed.each(&:forget!)
        __refresh
        :retry
      end

      def __stale(abspath) # :nodoc:
        @mutex.synchronize do
          @dirs.each_value do |d|
            d.forget! if !d.opaque? && abspath.start_with?(d.base == "/" ? "/" : "#{d.base}/")
          end
        end
        Index.activate(self, nil) # the next require refreshes
        nil
      end

      # How RubyGems' "-I beats a default gem" walk sees each $LOAD_PATH item, for the current
      # table: [table, items, positions], items holding the directory it looks in (the load dir's
      # base), false where it looks in nothing (an item that is a symlink: it skips those), nil
      # where the index cannot tell (an item it does not model or has not listed); positions: the
      # item of each table position. nil for a name under an ignored directory.
      def __walk(feature) # :nodoc:
        return nil if ignored?(feature)

        @mutex.synchronize do
          @walk = nil unless @walk && @walk[0].equal?(@table)
          @walk ||= [@table, walk_items.freeze, @positions].freeze
        end
      end

      def __event(event, feature, reason) # :nodoc:
        if reason
          Instrumentation.emit(event, feature, cache: :load_path, reason: reason)
        else
          Instrumentation.emit(event, feature, cache: :load_path)
        end
        nil
      end

      # The file require would load for +feature+ (nil when none or unknown), for the current
      # $LOAD_PATH. Loads nothing.
      def find(feature)
        return nil unless feature.is_a?(String)

        __refresh
        found = Index.lookup(@table, feature)
        found.is_a?(Array) ? @order[found[0]].abspath(found[1]) : nil
      end

      private

      def walk_items
        $LOAD_PATH.map do |item|
          dir = item.is_a?(String) && !item.empty? ? dir_for(item) : nil
          next nil if dir.nil? || dir.opaque? || dir.base.nil?

          File.symlink?(dir.source) ? false : dir.base
        end
      end

      def ignored?(feature)
        return false if @ignore_names.empty?

        feature.split("/").any? { |part| @ignore_names.include?(part) }
      end

      # Relative items are expanded in the cwd (and the table is then valid for that cwd only).
      def dir_for(item)
        return nil if item.is_a?(String) && item.empty? # load.c skips empty items

        key = item
        if Lister.relative?(item)
          @cwd ||= safe_pwd or return LoadDir.new(item, nil, :opaque)
          key = [item, @cwd]
        end
        @dirs[key] ||= @lister.load_dir(item, @cwd)
      end

      def safe_pwd
        Dir.pwd
      rescue SystemCallError
        nil
      end
    end
  end
end

# frozen_string_literal: true

require "rbconfig" unless defined?(RbConfig)

module Loadout
  module LoadPath
    # Answers "might Ruby consider this feature already provided?" without scanning
    # $LOADED_FEATURES. load.c rb_feature_p counts a feature as provided when $LOADED_FEATURES
    # holds the feature itself (with or without an extension: "enumerator.so", "thread.rb") or
    # "<expanded $LOAD_PATH item>/<feature><ext>". When the answer may be yes, the caller hands
    # the original feature to Ruby, which then decides with its own index and no filesystem
    # access; so the answer here only has to be a superset of Ruby's (it never says no when Ruby
    # says yes). That is what makes "prepend a path holding another a.rb after a was required"
    # still return false.
    #
    # Ruby appends to $LOADED_FEATURES in C, unseen by any observer, so new items are picked up
    # by comparing its size; edits by hand (delete, replace, []=, ...) are seen by the observer
    # and rebuild the table.
    class LoadedFeatures # :nodoc:
      # Extensions rb_feature_p understands (IS_RBEXT, IS_SOEXT, IS_DLEXT); any other "extension"
      # is part of the name for it.
      KNOWN_EXT = /\.(?:rb|so|o|bundle|dll|#{Regexp.escape(RbConfig::CONFIG["DLEXT"])})\z/.freeze
      # Keys are the last 1..DEPTH path components of each loaded feature (without a known
      # extension), so a lookup only meets features that end the same way. A feature named with
      # more components than DEPTH is keyed by its last DEPTH and checked in full.
      DEPTH = 3

      def initialize
        @known_ext = KNOWN_EXT # read per added feature (hot path: see ARCHITECTURE.md)
        @by_tail = {}
        @seen = 0
        @stale = true
      end

      def stale!
        @stale = true
      end

      # +stem+: the feature without a known extension; +lpaths+: Hash of expanded items, or nil
      # to count a loaded feature under any directory (a coarser superset).
      def maybe_loaded?(stem, lpaths)
        sync
        candidates = @by_tail[tail_key(stem, stem.count("/") + 1)] or return false
        tail = "/#{stem}"
        candidates = [candidates] unless candidates.is_a?(Array)
        candidates.each do |bare|
          return true if bare == stem
          next unless bare.end_with?(tail)

          prefix = bare.byteslice(0, bare.bytesize - tail.bytesize)
          return true if lpaths.nil? || lpaths.key?(prefix) || (prefix.empty? && lpaths.key?("/"))
        end
        false
      end

      private

      def sync
        features = $LOADED_FEATURES
        size = features.size
        if @stale || size < @seen
          @by_tail = {}
          @seen = 0
          @stale = false
        end
        return if size == @seen

        i = @seen
        while i < size
          add(features[i])
          i += 1
        end
        @seen = size
      end

      # Files every boot loads by the hundred, so: the keys for k = 1..DEPTH are cut while walking
      # back from the end once (one rindex per key), and the common ".rb" skips the Regexp.
      def add(feature)
        return unless feature.is_a?(String)

        bare = if feature.end_with?(".rb") then feature[0, feature.length - 3]
               elsif @known_ext.match?(feature) then feature[0, feature.rindex(".")]
               else feature
               end
        length = bare.length
        at = length
        k = 0
        while k < DEPTH
          # at: where the last k components begin, minus one (the slash), or nil past the start
          at = at.positive? ? bare.rindex("/", at - 1) : nil
          key = at ? bare[at + 1, length - at - 1] : bare
          insert(key, bare)
          break unless at

          k += 1
        end
      end

      def insert(key, bare)
        list = @by_tail[key]
        # One feature per list in the common case: no Array until a second one shares the key.
        if list.nil?
          @by_tail[key] = bare
        elsif list.is_a?(Array)
          list << bare
        else
          @by_tail[key] = [list, bare]
        end
      end

      # The last +k+ components of +path+ (at most DEPTH). Character indexes throughout.
      def tail_key(path, k)
        k = DEPTH if k > DEPTH
        at = path.length
        k.times do
          return path if at <= 0

          at = path.rindex("/", at - 1)
          return path if at.nil?
        end
        path[at + 1, path.length - at - 1]
      end
    end
  end
end

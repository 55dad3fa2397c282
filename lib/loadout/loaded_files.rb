# frozen_string_literal: true

module Loadout
  # Which files a boot loaded through the compile cache, kept in the store ("st/loaded") so that
  # `loadout check` answers for the files the app actually loads (with the exact variants it
  # asks for), not for every file under a directory.
  #
  # - Ruby files: $LOADED_FEATURES at exit, past where it stood when setup started, without the
  #   files still loading then (the main script, config/boot.rb: never served, see #start) and
  #   without loadout's own. Nothing is recorded per require: a warm boot pays nothing. Files
  #   run with `load` (a Rakefile, Rails' routes) are not in $LOADED_FEATURES, so not recorded.
  # - YAML and JSON: the store keys the handlers looked up (Counters#loaded), kept when the key
  #   has an entry at exit (a file the handler could not cache is left to Ruby every time: no miss).
  #
  # Written by Boot at exit only by boots that write the store anyway (see Boot#wrote?), and only
  # when the list changed; a warm boot that wrote nothing loaded only files that were cached. The
  # boot stores $LOADED_FEATURES' tail as one joined String (a C join and a compare with the
  # stored one, several times cheaper than grouping the paths by directory in Ruby), and the CLI
  # does the rest of the filtering.
  module LoadedFiles
    KEY = "st/loaded"
    FORMAT = 2
    LIB_PREFIX = "#{File.expand_path("..", __dir__)}/"

    @features_at_start = nil
    @stack = nil

    class << self
      # Called when setup starts: where $LOADED_FEATURES stands, and the call stack (the files
      # whose require is still running, which Ruby adds to $LOADED_FEATURES only when they end).
      def start #: () -> void
        @features_at_start = $LOADED_FEATURES.size
        @stack = caller_locations(1)
      end

      # Stores this boot's list unless the stored one has the same files, there or relocated (a
      # boot of the same app at another path: a fleet worker in a fresh clone). +cache+ is the
      # CompileCache module when it is installed; +iseq+ whether its ISeq kind is on.
      #: (untyped, untyped, bool) -> void
      def record(store, cache, iseq)
        entries = cache&.entries or return
        data = files_of(entries, store, iseq)
        files = Marshal.dump(data)
        old = store.get(KEY)
        # (Marshal of loadout's own record, in a cache dir that passed the trust rule.)
        old_files = old && (Marshal.load(old)[1] rescue nil) # rubocop:disable Security/MarshalLoad
        return if old_files && (old_files == files || same_elsewhere?(old_files, data))

        meta = { "at" => Time.now.to_i, "pid" => Process.pid, "program" => $PROGRAM_NAME.to_s, "format" => FORMAT,
                 "before" => before_files }
        store.put(KEY, Marshal.dump([Marshal.dump(meta), files]))
      end

      # The stored list: { "meta" => {...}, "roots" => the compile cache's roots, "iseq" =>
      # [variant, [paths]] or nil, "yaml" => [[key, path]], "json" => [[key, path]] }, or nil
      # when there is none or it is unusable.
      #: (untyped) -> Hash[String, untyped]?
      def load(store)
        raw = store.get(KEY) or return nil
        meta_raw, files_raw = Marshal.load(raw) # rubocop:disable Security/MarshalLoad -- written by #record
        meta = Marshal.load(meta_raw) # rubocop:disable Security/MarshalLoad
        files = Marshal.load(files_raw) # rubocop:disable Security/MarshalLoad
        return nil unless meta.is_a?(Hash) && meta["format"] == FORMAT
        return nil unless files.is_a?(Hash) && files["roots"].is_a?(Array)

        files.merge("meta" => meta, "iseq" => ruby_files(files["iseq"], meta["before"] || []))
      rescue StandardError, TypeError
        nil
      end

      # [[recorded root, root here]] for the roots a record's keys name (+from+: { root => tag }
      # it recorded) that are somewhere else under +to+ (this process's { root => tag }), deepest
      # first; empty when every root is where it was (or the record predates tags).
      #: (Hash[String, String]?, Hash[String, String]) -> Array[[String, String]]
      def relocation(from, to)
        return [] unless from.is_a?(Hash)

        here = to.invert
        from.filter_map { |root, tag| (now = here[tag]) && now != root && [root, now] }.sort_by { |r, _| -r.length }
      end

      # +path+ under the roots +pairs+ (see #relocation) moved.
      def relocate(path, pairs) #: (String, Array[[String, String]]) -> String
        pairs.each do |from, to|
          return "#{to}#{path.byteslice(from.bytesize, path.bytesize)}" if path.start_with?("#{from}/")
        end
        path
      end

      # The ISeq variant the compile cache uses under the compile options in force (what
      # ISeqHandler#options_changed computes), named by +key+ (a CompileCache::Key).
      def iseq_variant(key) #: (untyped) -> String
        key.variant(:iseq, RubyVM::InstructionSequence.compile_option.sort_by { |k, _| k.to_s }.inspect)
      end

      private

      def files_of(entries, store, iseq)
        data = entries.counters.loaded.group_by { |key, _| key.getbyte(3) == 121 ? "yaml" : "json" } # "cc/y/..."
        data = data.transform_values { |pairs| pairs.select { |key, _| store.key?(key) } }
        coverage = defined?(::Coverage) && ::Coverage.respond_to?(:running?) && ::Coverage.running?
        if iseq && !coverage
          features = $LOADED_FEATURES[(@features_at_start || 0)..] || []
          # loadout's own files (stats.rb under LOADOUT_STATS) do not make another list.
          data["iseq"] = [iseq_variant(entries.key), features.reject { |f| f.start_with?(LIB_PREFIX) }.join("\n")]
        end
        data["roots"] = entries.key.roots.to_a # the keys' roots: the CLI's own Gem.path may differ
        data["tags"] = entries.key.root_tags # how keys name them (a record read elsewhere: #relocation)
        data
      end

      # Whether +old_raw+ (a stored list) names the files of +data+ (this boot's), but with the app
      # and its bundle at other roots: a fleet's workers then do not each rewrite the record.
      def same_elsewhere?(old_raw, data)
        old = Marshal.load(old_raw) # rubocop:disable Security/MarshalLoad -- written by #record
        pairs = relocation(old["tags"], data["tags"])
        return false if pairs.empty? || old.keys.sort != data.keys.sort

        moved = pairs.to_h
        pattern = /^(?:#{pairs.map { |from, _| Regexp.escape(from) }.join("|")})(?=\/)/
        data.all? do |name, value|
          was = old[name]
          case name
          when "roots", "tags" then true
          when "iseq" then was[0] == value[0] && was[1].gsub(pattern) { |root| moved[root] } == value[1]
          else was.map { |key, path| [key, relocate(path, pairs)] } == value
          end
        end
      rescue StandardError, TypeError
        false
      end

      # [variant, paths]: the Ruby files of the stored features, without loadout's own and the
      # files loaded before setup.
      def ruby_files(value, before)
        return nil unless value.is_a?(Array) && value.size == 2 && value[1].is_a?(String)

        skip = before.to_h { |f| [f, true] }
        paths = value[1].split("\n").select { |f| f.end_with?(".rb") && !f.start_with?(LIB_PREFIX) && !skip.key?(f) }
        [value[0], paths.uniq]
      end

      # The files on the stack at setup, the main script first.
      def before_files
        (@stack || []).reverse.filter_map(&:absolute_path).uniq.reject { |f| f.start_with?(LIB_PREFIX) }
      end
    end
  end
end

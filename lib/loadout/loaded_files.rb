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
  # stored one: 6,000 features cost 13M instructions, ~2 ms on the dev VM, ~400 KB in the store;
  # grouping them by directory in Ruby cost 70M), and the CLI does the rest of the filtering.
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

      # Stores this boot's list unless the stored one has the same files. +cache+ is the
      # CompileCache module when it is installed; +iseq+ whether its ISeq kind is on.
      #: (untyped, untyped, bool) -> void
      def record(store, cache, iseq)
        entries = cache&.entries or return
        files = Marshal.dump(files_of(entries, store, iseq))
        old = store.get(KEY)
        return if old && (Marshal.load(old)[1] rescue nil) == files # rubocop:disable Style/RescueModifier

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
        data
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

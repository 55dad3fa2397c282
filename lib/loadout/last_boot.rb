# frozen_string_literal: true

module Loadout
  # The last boot's numbers for `loadout stats`, in a small text file beside the store
  # ("<store>.last-boot"), rewritten at the exit of every boot that may write the cache.
  #
  # Not in the store: a warm boot that hit everything writes nothing there (an append would grow
  # the log and rewrite the hint file on every boot), so a store record could only ever describe
  # the last boot that wrote. One small file costs a create, a write and a rename (~30 µs).
  # Written to a fresh random name (O_EXCL | O_NOFOLLOW, mode 0600) then renamed over the old one,
  # so readers never see half a file and nothing is written through a planted symlink. Plain
  # "name value" lines, parsed without evaluating anything: the CLI reads it.
  module LastBoot
    MAGIC = "loadout-last-boot 1"
    SUFFIX = ".last-boot"
    MAX_BYTES = 65_536

    class << self
      def path_for(store_path) #: (String) -> String
        "#{store_path}#{SUFFIX}"
      end

      # Writes +data+ (a Hash of Strings to numbers, Strings, booleans or nested Hashes of them)
      # for the store at +store_path+. Never raises: the numbers are not worth a failed exit.
      #: (String, Hash[String, untyped]) -> bool
      def write(store_path, data)
        path = path_for(store_path)
        tmp = "#{path}.#{Random.urandom(6).unpack1("H*")}.tmp"
        File.open(tmp, File::WRONLY | File::CREAT | File::EXCL | File::NOFOLLOW, 0o600) { |f| f.write(dump(data)) }
        File.rename(tmp, path)
        true
      rescue StandardError # an unwritable dir, a full disk, no random source: no record this time
        begin
          File.unlink(tmp) if tmp
        rescue SystemCallError
          nil
        end
        false
      end

      # What a boot records: when and who, the setup time, whether it wrote to the store (or had
      # its worker write), and each installed component's counters.
      #: (Array[Module], Float?, bool) -> Hash[String, untyped]
      def snapshot(installed, setup_seconds, wrote)
        data = { "at" => Time.now.to_i, "pid" => Process.pid, "program" => $PROGRAM_NAME.to_s,
                 "backend" => Loadout::BACKEND.to_s, "ruby" => RUBY_VERSION,
                 "setup_ms" => setup_seconds && (setup_seconds * 1000).round(2), "wrote" => wrote }
        installed.each do |mod|
          name = mod.name.split("::").last.gsub(/(?<!^)([A-Z])/, "_\\1").downcase # LoadPath -> load_path
          stats = mod.respond_to?(:stats) ? mod.stats : nil
          data[name] = stats.transform_keys(&:to_s) if stats.is_a?(Hash)
        end
        data
      end

      # The record for the store at +store_path+ as a flat Hash ("compile_cache.iseq.hits" =>
      # 3), or nil when there is none or it is not one of ours.
      #: (String) -> Hash[String, untyped]?
      def read(store_path)
        path = path_for(store_path)
        return nil unless File.file?(path) && File.size(path) <= MAX_BYTES

        parse(File.binread(path))
      rescue SystemCallError, IOError
        nil
      end

      # "name value" lines under a magic line; nested Hashes become dotted names.
      def dump(data, prefix = nil, lines = [MAGIC]) #: (Hash[String, untyped], ?String?, ?Array[String]) -> String
        data.each do |name, value|
          key = prefix ? "#{prefix}.#{name}" : name.to_s
          if value.is_a?(Hash)
            dump(value, key, lines)
          elsif !value.nil?
            lines << "#{key.tr(" \n", "__")} #{value.to_s.tr("\n", " ")}"
          end
        end
        prefix ? lines : "#{lines.join("\n")}\n"
      end

      def parse(text) #: (String) -> Hash[String, untyped]?
        lines = text.force_encoding(Encoding::UTF_8).scrub.split("\n")
        return nil unless lines.shift == MAGIC

        lines.to_h do |line|
          name, value = line.split(" ", 2)
          [name, scalar(value.to_s)]
        end
      end

      private

      def scalar(value)
        case value
        when /\A-?\d+\z/ then value.to_i
        when /\A-?\d+\.\d+\z/ then value.to_f
        when "true" then true
        when "false" then false
        else value
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "trust"
require_relative "gc_settings"

module Loadout
  # The last boot's numbers for `loadout stats`, in a small text file beside the store
  # ("<store>.last-boot"), rewritten at the exit of every boot that may write the cache.
  #
  # Not in the store: a warm boot that hit everything writes nothing there (an append would grow
  # the log and rewrite the hint file on every boot), so a store record could only ever describe
  # the last boot that wrote. The file is one fixed-size block overwritten in place (open, fstat,
  # one pwrite). Not a temp file renamed over it, nor a truncate: on ext4 both make the kernel
  # flush the data at once (auto_da_alloc), a disk wait in every boot. A record
  # starts and ends with the same random nonce, so a read that raced a write (two boots exiting
  # at once) is seen as torn and ignored. Opened with O_NOFOLLOW and written only when it is a
  # regular file of ours with one link, mode 0600. Plain "name value" lines, parsed without
  # evaluating anything: the CLI reads it.
  module LastBoot
    MAGIC = "loadout-last-boot 1"
    SUFFIX = ".last-boot"
    SIZE = 4096 # every record is padded to this, so a rewrite never shrinks the file

    class << self
      def path_for(store_path) #: (String) -> String
        "#{store_path}#{SUFFIX}"
      end

      # Writes +data+ (a Hash of Strings to numbers, Strings, booleans or nested Hashes of them)
      # for the store named +store_name+ in +dir+ (the cache dir the boot checked, held open:
      # Trust::DirHandle; the file is opened in it, never by path). Never raises: the numbers are
      # not worth a failed exit. The file gets the cache's file mode (Trust.file_mode), whatever
      # the umask.
      #: (Trust::DirHandle, String, Hash[String, untyped]) -> bool
      def write(dir, store_name, data)
        record = dump(data, Random.urandom(8).unpack1("H*"))
        mode = Trust.file_mode(dir.shared?)
        f = dir.open("#{store_name}#{SUFFIX}", File::WRONLY | File::CREAT, mode)
        begin
          stat = f.stat
          return false unless stat.file? && stat.nlink == 1 && stat.uid == Process.euid

          f.chmod(mode) unless stat.mode & 0o777 == mode

          f.truncate(SIZE) if stat.size > SIZE # a file from elsewhere: once
          f.syswrite(record)
        ensure
          f.close
        end
        true
      rescue StandardError # an unwritable dir, a full disk, a FIFO in its place: no record this time
        false
      end

      # What a boot records: when and who, the setup time, whether it appended anything to the
      # store, each installed component's counters, and the GC's counts and heap at the end
      # (GCSettings: what `loadout gc` recommends from).
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
        data["gc"] = GCSettings.snapshot
        data
      end

      # The record for the store at +store_path+ as a flat Hash ("compile_cache.iseq.hits" =>
      # 3), or nil when there is none, it is not one of ours, or it was read while being written.
      #: (String) -> Hash[String, untyped]?
      def read(store_path)
        path = path_for(store_path)
        return nil unless File.file?(path) && File.size(path) <= SIZE

        parse(File.binread(path))
      rescue SystemCallError, IOError
        nil
      end

      # "name value" lines between a magic line and an end line that carry the same nonce,
      # padded with newlines to SIZE; nested Hashes become dotted names.
      def dump(data, nonce) #: (Hash[String, untyped], String) -> String
        lines = ["#{MAGIC} #{nonce}"]
        flatten(data, nil, lines)
        tail = "\nend #{nonce}\n"
        # Lines that do not fit are left out (the last ones: reason counts), never cut in half.
        lines.pop while lines.size > 1 && lines.sum { |l| l.bytesize + 1 } + tail.bytesize > SIZE
        record = (lines.join("\n") + tail).b
        record << ("\n" * [SIZE - record.bytesize, 0].max)
      end

      def parse(text) #: (String) -> Hash[String, untyped]?
        lines = text.force_encoding(Encoding::UTF_8).scrub.split("\n").reject(&:empty?)
        head = lines.shift.to_s
        return nil unless head.start_with?("#{MAGIC} ") && lines.pop == "end #{head.delete_prefix("#{MAGIC} ")}"

        lines.to_h do |line|
          name, value = line.split(" ", 2)
          [name, scalar(value.to_s)]
        end
      end

      private

      def flatten(data, prefix, lines)
        data.each do |name, value|
          key = prefix ? "#{prefix}.#{name}" : name.to_s
          if value.is_a?(Hash)
            flatten(value, key, lines)
          elsif value.is_a?(String)
            lines << "#{key} #{value.tr("\n", " ")}" # a program name: one line
          elsif !value.nil?
            lines << "#{key} #{value}" # keys are loadout's own words: no blanks to escape
          end
        end
      end

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

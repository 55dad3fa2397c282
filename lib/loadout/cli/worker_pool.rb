# frozen_string_literal: true

require "etc"
require "rbconfig"

module Loadout
  class CLI
    # Runs jobs in N spawned Ruby processes. spawn (posix_spawn/vfork + exec) rather than fork:
    # a forked child of a threaded Ruby can hang under QEMU user emulation (bootsnap #495), a
    # fresh exec cannot. Each worker reports progress as one line per finished item on stdout.
    class WorkerPool # :nodoc:
      LIB = File.expand_path("../..", __dir__)

      # CPUs this process may use: the online CPU count, capped by a cgroup v2 cpu.max or a
      # cgroup v1 CFS quota (containers often see every host CPU but may use two).
      #: (?String) -> Integer
      def self.cpu_count(cgroup_root = "/sys/fs/cgroup")
        count = Etc.nprocessors
        quota = cgroup_limit(cgroup_root)
        quota ? [[count, quota].min, 1].max : count
      end

      def self.cgroup_limit(root)
        max = read(File.join(root, "cpu.max"))
        if max
          quota, period = max.split
          return nil if quota == "max" || period.to_i <= 0

          return (quota.to_f / period.to_i).ceil
        end
        v1 = ->(name) { read(File.join(root, "cpu", name)) || read(File.join(root, "cpu,cpuacct", name)) }
        quota = v1.call("cpu.cfs_quota_us")
        period = v1.call("cpu.cfs_period_us")
        return nil unless quota && period && quota.to_i.positive? && period.to_i.positive?

        (quota.to_f / period.to_i).ceil
      end

      def self.read(path)
        File.binread(path).strip
      rescue SystemCallError
        nil
      end
      private_class_method :read

      # Splits +items+ over +jobs+ workers, each started as `loadout __worker ARGS LISTFILE`;
      # yields every line a worker prints (one per finished item). Returns the number of workers
      # that failed.
      #: (Array[String], Integer, Array[String]) { (String) -> void } -> Integer
      def self.run(items, jobs, worker_args)
        groups = Array.new(jobs) { [] }
        items.each_with_index { |item, i| groups[i % jobs] << item }
        workers = groups.reject(&:empty?).map { |group| start(group, worker_args) }
        buffers = workers.to_h { |w| [w[:out], +""] }
        until buffers.empty?
          ready, = IO.select(buffers.keys)
          ready.each do |io|
            chunk = io.read_nonblock(65_536, exception: false)
            next if chunk == :wait_readable

            if chunk.nil?
              rest = buffers.delete(io)
              yield rest unless rest.empty?
              next
            end
            buf = buffers[io] << chunk
            while (nl = buf.index("\n"))
              yield buf.slice!(0, nl + 1).chomp
            end
          end
        end
        workers.count do |w|
          w[:out].close
          _, status = Process.wait2(w[:pid])
          w[:list].close!
          !status.success?
        end
      end

      def self.start(group, worker_args)
        require "tempfile"
        # Binary: the paths are bytes, whatever the encodings this process runs with.
        list = Tempfile.new("loadout-precompile", binmode: true)
        list.write(group.join("\0"))
        list.flush
        reader, writer = IO.pipe(binmode: true)
        cmd = [RbConfig.ruby, "-I", LIB, "-e", 'require "loadout/cli"; exit Loadout::CLI.new(ARGV).run',
               "__worker", *worker_args, list.path]
        # A parent on the Ruby backend because the extension is missing has said so once already.
        env = BACKEND == :ruby ? { "LOADOUT_PURE" => "1" } : {}
        pid = Process.spawn(env, *cmd, out: writer, in: File::NULL)
        writer.close
        { pid: pid, out: reader, list: list }
      rescue StandardError
        [reader, writer].each { |io| io&.close unless io&.closed? }
        list&.close!
        raise
      end
      private_class_method :start
    end
  end
end

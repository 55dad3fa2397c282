# frozen_string_literal: true

# Shared helpers for bench/ scripts: interleaved rounds, medians, ratio tables, strace counts.
module Bench
  module_function

  def clock
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def time_ms
    t = clock
    yield
    (clock - t) * 1000.0
  end

  def median(values)
    sorted = values.sort
    mid = sorted.size / 2
    sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
  end

  # Runs each named block once per round, in a rotating order so no scenario always goes first;
  # returns { name => [ms, ...] }.
  def interleave(rounds, scenarios)
    samples = Hash.new { |h, k| h[k] = [] }
    names = scenarios.keys
    rounds.times do |round|
      names.rotate(round).each { |name| samples[name] << time_ms(&scenarios[name]) }
    end
    samples
  end

  # Waits (up to +limit+ s) until no process of group +pgid+ is running: anything a boot leaves
  # running (a cache that finishes its writes in another process) must not run into the next
  # measurement.
  def wait_group(pgid, limit = 120)
    deadline = clock + limit
    sleep 0.05 while group_alive?(pgid) && clock < deadline
  end

  # A process of the group still running. Zombies do not count: an init that is slow to reap
  # them would otherwise hold every boot up.
  def group_alive?(pgid)
    unless File.directory?("/proc/self")
      begin
        Process.kill(0, -pgid)
        return true
      rescue SystemCallError
        return false
      end
    end

    Dir.children("/proc").any? do |entry|
      next false unless entry.match?(/\A\d+\z/)

      fields = File.read("/proc/#{entry}/stat").split(") ", 2).last.split
      fields[0] != "Z" && fields[2].to_i == pgid
    rescue SystemCallError
      false
    end
  end

  # The require paths of an installed gem (bootsnap and msgpack for the side-by-side children,
  # which get them with -I instead of booting Bundler), or [] when it is not installed.
  def gem_paths(name)
    (Gem.loaded_specs[name] || Gem::Specification.find_by_name(name)).full_require_paths
  rescue Gem::MissingSpecError
    []
  end

  def table(rows, headers)
    widths = headers.each_index.map { |i| ([headers[i]] + rows.map { |r| r[i].to_s }).map(&:size).max }
    line = ->(cells) { "| " + cells.each_with_index.map { |c, i| c.to_s.ljust(widths[i]) }.join(" | ") + " |" }
    [line.(headers), "|" + widths.map { |w| "-" * (w + 2) }.join("|") + "|", *rows.map(&line)].join("\n")
  end

  def strace?
    system("command -v strace >/dev/null 2>&1")
  end

  # Total syscalls (and the per-call table) of a command under `strace -c -f`, or nil without strace.
  def syscalls(cmd, env: {})
    return nil unless strace?

    require "open3"
    _out, err, _st = Open3.capture3(env, "strace", "-c", "-f", "-qq", *cmd)
    total = err.lines.grep(/\btotal\b/).last
    counts = err.lines.filter_map do |l|
      cols = l.split
      [cols.last, cols[3].to_i] if cols.size >= 5 && cols[3] =~ /\A\d+\z/ && cols.last != "total"
    end.to_h
    { total: total ? total.split[3].to_i : counts.values.sum, calls: counts }
  end

  def fmt(ms)
    format("%.1f", ms)
  end
end

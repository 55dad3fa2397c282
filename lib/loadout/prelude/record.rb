# frozen_string_literal: true

# `loadout prelude`'s child: `ruby record.rb IMAGE APP_ROOT`, run by the Ruby the image is for.
# It starts as the app's processes start (Ruby's prelude, then bundler/setup when
# BUNDLE_GEMFILE names a Gemfile), compiles every Ruby file that start loaded from outside the
# app (its bundle included) as the compile cache would (CompileCache::ISeqBuild.binary_for:
# Ruby's labels; a file Ruby must compile itself is left out), and writes the image the
# prelude's shim (rubygems.rb here) serves: Marshal of [MAGIC, the compile options,
# { path => [size, mtime s, mtime ns, warns under -w, ISeq binary] }]. Prints one line:
# "files=N bytes=N skipped=N bundler=yes|no|why".
image, root = ARGV
abort "usage: ruby #{__FILE__} IMAGE APP_ROOT (run by `loadout prelude`)" unless image && root
bundler = "no"
if (gemfile = ENV["BUNDLE_GEMFILE"]) && File.file?(gemfile)
  begin
    require "bundler/setup"
    bundler = "yes"
  rescue StandardError, LoadError => e
    bundler = "#{e.class}: #{e.message.lines.first&.chomp}"
  end
end
# Not the app's own files; its bundle's are in (vendor/bundle: a Gem.path dir inside the app).
root_prefix = "#{File.expand_path(root)}/"
bundle_prefixes = Gem.path.map { |d| "#{File.expand_path(d)}/" }
features = $LOADED_FEATURES.select do |f|
  f.end_with?(".rb") && (!f.start_with?(root_prefix) || bundle_prefixes.any? { |d| f.start_with?(d) })
end - [File.expand_path(__FILE__)]

require_relative "../../loadout"
require_relative "../compile_cache/iseq_build"

magic = "loadout-prelude-1" # the shim's Loadout::Prelude::MAGIC (and CLI::PreludeCommand::MAGIC)
options = RubyVM::InstructionSequence.compile_option
racy = Time.now.to_i - 2 # (a file written in the clock tick it was read in: its stat cannot tell)
files = {}
skipped = 0
features.each do |path|
  stat = File.stat(path)
  mtime = stat.mtime
  source = mtime.to_i < racy && Loadout::Trust.read_source(path)
  binary, warned, = source && Loadout::CompileCache::ISeqBuild.binary_for(path, source, options)
  next skipped += 1 unless binary && File.stat(path).mtime == mtime

  files[path] = [stat.size, mtime.tv_sec, mtime.tv_nsec, warned ? true : false, binary]
rescue SystemCallError, IOError
  skipped += 1
end

data = Marshal.dump([magic, options, files])
temp = "#{image}.#{Process.pid}.tmp"
begin
  File.open(temp, File::WRONLY | File::CREAT | File::EXCL, 0o644) do |f|
    f.write(data)
    f.fsync
  end
  File.rename(temp, image)
ensure
  File.unlink(temp) if File.exist?(temp)
end
puts "files=#{files.size} bytes=#{data.bytesize} skipped=#{skipped} bundler=#{bundler}"

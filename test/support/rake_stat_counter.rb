# frozen_string_literal: true

# Loaded into rake subprocesses by test/rake/stat_count_test.rb: counts calls of File's
# stat-family singleton methods (each costs one stat/lstat syscall) made after it is loaded, on
# relative paths: the project's files (rubygems' own absolute-path checks, when something is
# required mid-run, are not the tasks' doing).
module Loadout
  module TestSupport
    module RakeStatCounter
      METHODS = %i[
        stat lstat mtime atime ctime exist? file? directory? size size? zero? empty? readable? writable?
        executable? symlink? ftype
      ].freeze
      @count = 0

      class << self
        attr_accessor :count
      end

      counting = Module.new do
        METHODS.each do |m|
          define_method(m) do |*args, **kw|
            path = args.first
            RakeStatCounter.count += 1 if path.is_a?(String) && !path.start_with?("/")
            kw.empty? ? super(*args) : super(*args, **kw)
          end
        end
      end
      File.singleton_class.prepend(counting)
    end
  end
end

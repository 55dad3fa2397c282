# frozen_string_literal: true

# Loaded only into rake subprocesses started by the rake differential tests (never by
# lib/loadout): injects one deliberate bug into loadout/rake's memo, chosen by
# LOADOUT_RAKE_BREAK, so each scenario can prove it detects a wrong memo.
#
#   never_invalidate     executing a task never drops the memo
#   trusted_in_actions   the memo stays in use while an action runs (dropped when it returns)
#   own_path_only        executing a file task drops only its own path (misses side outputs)
#   enoent_as_fresh      a missing file is reported as existing and brand new
#   basename_key         stats are remembered by basename (two paths share one entry)
#   second_resolution    mtimes are truncated to whole seconds
#   shadowed_kept        a task added mid-run drops no remembered lookup
#   caret_kept           lookups of "^name" (the parent scope's name) are remembered too
require "loadout/rake"

module Loadout
  module TestSupport
    module RakeBrokenMemo
      RUN = Loadout::RakeMemo.const_get(:Run)
      MODE = ENV.fetch("LOADOUT_RAKE_BREAK")

      module OwnPathOnly
        def execute(*)
          super
        ensure
          RUN.instance_variable_get(:@stats)&.delete(name) if is_a?(::Rake::FileTask)
        end
      end

      # TaskManager#[] as loadout's, remembering "^" names as well.
      module CaretKept
        def [](task_name, scopes = nil)
          name = task_name.to_s
          return super unless name.include?("^")

          cache = RUN.lookups(self) or return super
          scope = scopes || current_scope
          cache[scope]&.[](name) || RUN.remember(cache, scope, name) { super }
        end
      end

      # Run.mtime, through +change+ (a Time or false in; the same kinds out).
      def self.wrap_mtime(&change)
        original = RUN.method(:mtime)
        RUN.singleton_class.send(:define_method, :mtime) do |path|
          value = original.call(path)
          next value if value.nil?

          broken = change.call(value)
          # Later reads of the memo see the bug too.
          stats = RUN.instance_variable_get(:@stats)
          stats[path] = broken ? broken.tv_sec * 1_000_000_000 + broken.tv_nsec : :enoent if stats&.key?(path)
          broken
        end
      end

      case MODE
      when "never_invalidate", "own_path_only"
        RUN.singleton_class.send(:define_method, :action_started) {}
        RUN.singleton_class.send(:define_method, :action_finished) {}
        ::Rake::Task.prepend(OwnPathOnly) if MODE == "own_path_only"
      when "trusted_in_actions"
        RUN.singleton_class.send(:define_method, :action_started) { @lock.synchronize { @acting += 1 } }
      when "enoent_as_fresh"
        wrap_mtime { |value| value || Time.now }
      when "second_resolution"
        wrap_mtime { |value| value && Time.at(value.to_i) }
      when "basename_key"
        RUN.singleton_class.send(:define_method, :mtime) do |path|
          stats = @stats or next nil
          value = stats[File.basename(path)] ||= begin
            time = File.mtime(path)
            time.tv_sec * 1_000_000_000 + time.tv_nsec
          rescue Errno::ENOENT
            :enoent
          end
          value.is_a?(Integer) && Time.at(0, value, :nsec)
        end
      when "shadowed_kept"
        RUN.singleton_class.send(:define_method, :task_added) { |_app, _name| @lock.synchronize { @table_gen += 1 } }
      when "caret_kept"
        ::Rake::Application.prepend(CaretKept)
      else
        raise ArgumentError, "LOADOUT_RAKE_BREAK: unknown mode #{MODE.inspect}"
      end
    end
  end
end

# frozen_string_literal: true

module Loadout
  # Root of every exception loadout raises on purpose. C code looks these classes up; it never
  # defines its own.
  class Error < StandardError; end

  # A bad option or environment value. The message names the option and the accepted values.
  class ConfigError < Error
    def initialize(name, value, accepted)
      @name = name
      @value = value
      @accepted = accepted
      super("#{name}: #{value.inspect} is not accepted; use #{accepted}")
    end

    attr_reader :name, :value, :accepted
  end

  # A command-line mistake (unknown command, bad option or argument). The CLI prints the message
  # and +usage+ on stderr and exits 1.
  class UsageError < Error
    def initialize(message, usage = nil)
      @usage = usage
      super(message)
    end

    attr_reader :usage
  end

  # A file or directory loadout cannot use: the message names the path, the problem and the fix.
  class PathError < Error
    def initialize(path, problem, fix)
      @path = path
      @problem = problem
      @fix = fix
      super("#{self.class::SUBJECT} #{path}: #{problem}; #{fix}")
    end

    attr_reader :path, :problem, :fix
  end

  # A store file cannot be opened or written (EACCES, EROFS, ENOSPC, a directory in its place...).
  # Raised only by stores opened without fail_safe: the caches open theirs with fail_safe: true,
  # which degrades to read-only or empty with one warning instead.
  class StoreError < PathError
    SUBJECT = "store"
  end

  # The store file was written by a newer loadout whose record format this version cannot read.
  class StoreVersionError < StoreError; end

  # A Journal directory cannot be used, or a write/fdatasync to it failed (after which the
  # journal refuses further appends: the kernel may already have dropped the unsynced data).
  class JournalError < PathError
    SUBJECT = "journal"
  end

  # Another process (or another Journal object) holds the journal directory.
  class JournalLockedError < JournalError; end

  # A loadout:* Rake task could not do its job (the CLI it runs is missing, or it failed).
  class RakeTaskError < Error
    def initialize(task, problem)
      @task = task
      @problem = problem
      super("#{task}: #{problem}")
    end

    attr_reader :task, :problem
  end
end

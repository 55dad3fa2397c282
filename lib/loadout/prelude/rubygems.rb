# frozen_string_literal: true

# loadout's prelude. `loadout prelude` copies this file into its directory, which the user puts
# on RUBYLIB; Ruby's own prelude then finds it for `require "rubygems"`, before any gem can load.
# It serves RubyGems', Bundler's and Ruby's own files compiled (the image `loadout prelude`
# made for this Ruby) instead of Ruby compiling them in every process, then loads the real
# rubygems.rb as Ruby would have: the same path, the same $LOADED_FEATURES, the same $LOAD_PATH
# (its directory is taken off again first). It loads nothing of loadout's, so it works (or steps
# aside) whatever loadout version, Ruby or engine runs it. Anything unexpected: Ruby compiles,
# as without it, after one warning.
module Loadout
  # The hook this file installs, and what it serves. :nodoc:
  module Prelude
    MAGIC = "loadout-prelude-1"
    DIR = __dir__
    SHIM = __FILE__
    # The image for this Ruby: ISeq binaries are only valid for the Ruby that made them.
    IMAGE = File.join(DIR, "#{RUBY_ENGINE}-#{RUBY_VERSION}-p#{RUBY_PATCHLEVEL}-#{RUBY_PLATFORM}-" \
                           "#{RUBY_REVISION.to_s[0, 12]}.image")

    # load_iseq: an image file fresh by its stat, else on to the next hook (or Ruby's compile).
    module ImageHook
      def load_iseq(path)
        Prelude.fetch(path) || (defined?(super) ? super : nil)
      end

      # Other compile options make other instruction sequences: the image's are off from then on.
      def compile_option=(options)
        super.tap { Prelude.stop }
      end
    end

    @files = nil # { path => [size, mtime s, mtime ns, warns under -w, binary] }
    @shim_feature = false # true once this file is loaded: its own $LOADED_FEATURES entry goes next
    @served = 0
    @stale = 0

    class << self
      # How many files this process got from the image.
      attr_reader :served

      # For LOADOUT_STATS: files served, and files of the image Ruby compiled because they changed.
      def stats
        { served: @served, stale: @stale }
      end

      # Reads the image, if there is one for this Ruby that this user can trust, and hooks
      # load_iseq. Returns whether it did.
      def start
        return false unless RUBY_ENGINE == "ruby" && defined?(RubyVM::InstructionSequence.load_from_binary)

        # (Hooked even with nothing to serve: the hook takes this file's entry out of $LOADED_FEATURES.)
        RubyVM::InstructionSequence.singleton_class.prepend(ImageHook)
        return false unless File.file?(IMAGE)

        unless trusted?(DIR, true) && trusted?(IMAGE, false)
          return refuse("#{IMAGE} or its directory belongs to or can be written by another user than " \
                        "this one (uid #{Process.euid}) and root")
        end
        # (Marshal: an image this user or root wrote, in a directory nobody else can write.)
        magic, options, files = Marshal.load(File.binread(IMAGE)) # rubocop:disable Security/MarshalLoad
        return refuse("#{IMAGE} is not an image of this loadout prelude") unless magic == MAGIC
        return false unless options == RubyVM::InstructionSequence.compile_option # (--enable=frozen-string-literal...)

        @files = files
        true
      rescue StandardError => e
        refuse("#{IMAGE} could not be read (#{e.class}: #{e.message})")
      end

      # The instruction sequence of +path+ if the image has it and the file is as it was compiled.
      def fetch(path)
        loaded! if @shim_feature
        files = @files or return nil
        entry = files.delete(path) or return nil # (a file loads once; a second load compiles)
        # A hook above this one (a compile cache set up since) had the file first: what it passes
        # on is Ruby's to compile (loadout's stores what Ruby compiles on its misses).
        return stop unless RubyVM::InstructionSequence.method(:load_iseq).owner == ImageHook
        return nil if entry[3] && $VERBOSE # (its compile prints warnings under -w: Ruby's compile prints them)
        return nil if defined?(Coverage.running?) && Coverage.running? # (coverage counts Ruby's compile)

        stat = File.stat(path)
        mtime = stat.mtime
        unless stat.size == entry[0] && mtime.tv_sec == entry[1] && mtime.tv_nsec == entry[2]
          @stale += 1
          return nil
        end

        iseq = RubyVM::InstructionSequence.load_from_binary(entry[4])
        @served += 1
        iseq
      rescue StandardError => e
        refuse("#{IMAGE} could not serve #{path} (#{e.class}: #{e.message})")
        nil
      end

      # Serves nothing more. Returns nil.
      def stop
        @files = nil
      end

      # Called when this file is done loading: Ruby adds its path to $LOADED_FEATURES after that
      # (behind the real rubygems.rb), and the next file Ruby loads takes it out.
      def shim_loaded
        @shim_feature = true
      end

      private

      def loaded!
        @shim_feature = false
        $LOADED_FEATURES.delete(SHIM)
      end

      # Owned by this user or root, not writable by others (for the directory: what another user
      # could put there, this process would run). The directory as RUBYLIB names it (a link to it
      # is the user's own choice, as the path is); the image itself, not a link.
      def trusted?(path, dir)
        stat = dir ? File.stat(path) : File.lstat(path)
        (dir ? stat.directory? : stat.file?) && (stat.uid == Process.euid || stat.uid.zero?) &&
          (stat.mode & 0o022).zero?
      end

      def refuse(why)
        @files = nil
        warn "loadout prelude: #{why}; Ruby compiles RubyGems' and Bundler's files as usual " \
             "(rerun `loadout prelude`, or take #{DIR} off RUBYLIB)"
        false
      end
    end
  end
end

# What Ruby would have loaded without this directory on RUBYLIB: the first rubygems.rb on the
# load path after it (Ruby tries each suffix across the whole path before the next one). The
# directory is known by what it is, not by its name: RUBYLIB may name it through a link, and
# Ruby names this file by its real path.
$LOAD_PATH.delete_if { |dir| File.identical?(dir, Loadout::Prelude::DIR) }
rubygems = $LOAD_PATH.each do |dir|
  path = File.expand_path("rubygems.rb", dir)
  break path if File.file?(path) && !File.identical?(path, Loadout::Prelude::SHIM)
end
Loadout::Prelude.start
begin
  require(rubygems.is_a?(String) ? rubygems : "rubygems")
ensure
  Loadout::Prelude.shim_loaded
end

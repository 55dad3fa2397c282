# frozen_string_literal: true

require "open3"
require "rbconfig"

module Loadout
  class CLI
    # `loadout prelude`: the prelude directory (default: "prelude" in the cache dir). Ruby
    # compiles RubyGems' own files in every process before any gem, loadout included, can load,
    # and Bundler's in every `bundler/setup`, before an app can set up a cache: about a third of
    # `ruby -e ''`. With the directory on RUBYLIB, Ruby's prelude finds loadout's rubygems.rb
    # there first, which serves those files compiled and loads the real one
    # (lib/loadout/prelude/rubygems.rb). This command copies that file there and records the
    # image for the Ruby it runs on (lib/loadout/prelude/record.rb, in a child that starts as the
    # app starts: bundler/setup when the app has a Gemfile). `--env` prints only the RUBYLIB line.
    class PreludeCommand # :nodoc:
      SOURCE = File.expand_path("../prelude", __dir__)
      SHIM = "rubygems.rb"
      MAGIC = "loadout-prelude-1" # the shim's Loadout::Prelude::MAGIC

      # The name the shim looks for: its Loadout::Prelude::IMAGE.
      def self.image_name
        "#{RUBY_ENGINE}-#{RUBY_VERSION}-p#{RUBY_PATCHLEVEL}-#{RUBY_PLATFORM}-#{RUBY_REVISION.to_s[0, 12]}.image"
      end

      # For `loadout check`: the prelude directories on +rubylib+ (those holding loadout's shim),
      # each with what a process of this Ruby would get there: [dir, status, detail] where status
      # is :hit (detail: the image's file count), :stale (detail: [changed, count]), :other_shim
      # (another loadout's shim: rerun the command), :no_image or :unusable (detail: why).
      def self.check(rubylib)
        shim = File.binread(File.join(SOURCE, SHIM))
        rubylib.to_s.split(File::PATH_SEPARATOR).filter_map do |dir|
          path = File.join(dir, SHIM)
          next unless File.file?(path) && (text = File.binread(path)).include?("loadout's prelude")
          next [dir, :other_shim, nil] unless text == shim

          [dir, *image_status(File.join(dir, image_name))]
        end
      end

      # The shim's rule for its directory and image (Loadout::Prelude.trusted?): this user's or
      # root's, and nobody else can write it.
      def self.trusted?(stat)
        (stat.uid == Process.euid || stat.uid.zero?) && (stat.mode & 0o022).zero?
      end

      # [:hit, count] / [:stale, [changed, count]] / [:no_image, nil] / [:unusable, why]: as the
      # shim would judge the image at +path+ now (its trust rule, its magic, each file's stat).
      def self.image_status(path)
        return [:no_image, nil] unless File.file?(path)

        file = File.lstat(path)
        unless file.file? && trusted?(file) && trusted?(File.stat(File.dirname(path)))
          return [:unusable, "another user than this one and root can write it, or owns it"]
        end

        magic, options, files = Marshal.load(File.binread(path)) # rubocop:disable Security/MarshalLoad
        return [:unusable, "not an image of this loadout's prelude"] unless magic == MAGIC && files.is_a?(Hash)
        return [:unusable, "made with other compile options than this Ruby's"] unless
          options == RubyVM::InstructionSequence.compile_option

        changed = files.count do |file, (size, sec, nsec)|
          stat = File.stat(file)
          stat.size != size || stat.mtime.tv_sec != sec || stat.mtime.tv_nsec != nsec
        rescue SystemCallError
          true
        end
        changed.zero? ? [:hit, files.size] : [:stale, [changed, files.size]]
      rescue StandardError, TypeError => e
        [:unusable, "could not be read (#{e.class}: #{e.message})"]
      end

      def initialize(cli, argv)
        @cli = cli
        @argv = argv
      end

      def run
        dir = nil
        env_only = false
        banner = "Usage: loadout prelude [--dir DIR] [--env] [--cache-dir DIR]\n\n#{COMMANDS["prelude"]}"
        _, ctx = @cli.parse(@argv, "prelude", banner) do |o|
          o.on("--dir DIR", "the prelude directory (default: prelude in the cache dir)") { |v| dir = v }
          o.on("--env", "print only the RUBYLIB line") { env_only = true }
        end
        return 0 unless ctx

        unless RUBY_ENGINE == "ruby"
          @cli.err.puts "loadout prelude: the prelude serves CRuby's instruction sequences; #{RUBY_ENGINE} " \
                        "has none to serve, so there is nothing to record here"
          return 0
        end
        dir = File.expand_path(dir || File.join(ctx.config.cache_dir, "prelude"))
        prepare(dir, ctx.config.trust_shared_cache)
        image = File.join(dir, self.class.image_name)
        summary = record(image, ctx.config.root, dir)
        install_shim(dir)
        return print_env(dir) if env_only

        print_report(dir, image, summary)
        0
      end

      private

      def out
        @cli.out
      end

      # Makes +dir+ as loadout makes its cache dirs, and refuses one the shim would not trust.
      def prepare(dir, shared)
        Trust.make_dirs(dir, shared)
        stat = File.stat(dir) # (as the shim checks it: a link to the directory is the user's choice)
        return if stat.directory? && self.class.trusted?(stat)

        raise Error, "prelude: #{dir} is writable by other users or not this user's (uid #{stat.uid}, mode " \
                     "#{format("%o", stat.mode & 0o7777)}): Ruby would run what they put there; fix: chmod go-w " \
                     "#{dir}, or give --dir another directory"
      rescue SystemCallError => e
        raise Error, "prelude: cannot create #{dir} (#{e.message.sub(/ @ .*/, "")}); fix: create it for this user, " \
                     "or give --dir another directory"
      end

      # Runs the recording child for +image+; returns its summary ({ "files" => "43", ... }).
      def record(image, root, dir)
        # The child starts as this command's environment says the app's processes start (RUBYOPT and
        # all), without the prelude directory itself.
        env = @cli.env.to_h.merge("RUBYLIB" => rubylib_without(dir))
        gemfile = @cli.env["BUNDLE_GEMFILE"] ||
                  %w[Gemfile gems.rb].map { |g| File.join(root, g) }.find { |f| File.file?(f) }
        env["BUNDLE_GEMFILE"] = gemfile if gemfile
        output, errors, status = Open3.capture3(env, RbConfig.ruby, File.join(SOURCE, "record.rb"), image, root,
                                                chdir: root)
        unless status.success?
          line = errors.lines.reject { |l| l.strip.empty? }.last.to_s.strip[0, 300]
          raise Error, "prelude: recording the image failed (#{line})"
        end
        output.lines.last.to_s.split.to_h { |pair| pair.split("=", 2) }
      end

      # RUBYLIB without +dir+ (and without +also+).
      def rubylib_without(dir, also = nil)
        rest = @cli.env["RUBYLIB"].to_s.split(File::PATH_SEPARATOR)
        rest = rest.reject { |d| File.expand_path(d) == dir || File.identical?(d, dir) || d == also }
        rest.empty? ? nil : rest.join(File::PATH_SEPARATOR)
      end

      # The lib dir of the Bundler that `bundle exec` put on RUBYLIB for the command it started:
      # how this command was run, not how the app's processes start.
      def bundle_exec_lib
        return nil unless @cli.env["BUNDLE_BIN_PATH"] && defined?(::Bundler)

        bundler = $LOADED_FEATURES.find { |f| f.end_with?("/bundler.rb") }
        bundler && File.dirname(bundler)
      end

      # Copies the shim unless the same one is there (atomically: a Ruby starting meanwhile finds
      # the old file or the new one).
      def install_shim(dir)
        source = File.binread(File.join(SOURCE, SHIM))
        target = File.join(dir, SHIM)
        return if File.file?(target) && File.binread(target) == source

        temp = "#{target}.#{Process.pid}.tmp"
        File.open(temp, File::WRONLY | File::CREAT | File::EXCL, 0o644) { |f| f.write(source) }
        File.rename(temp, target)
      ensure
        File.unlink(temp) if temp && File.exist?(temp)
      end

      def print_env(dir)
        out.puts "RUBYLIB=#{rubylib_line(dir)}"
        0
      end

      def rubylib_line(dir)
        [dir, rubylib_without(dir, bundle_exec_lib)].compact.join(File::PATH_SEPARATOR)
      end

      def print_report(dir, image, summary)
        bundler = summary["bundler"].to_s
        started = case bundler
                  when "yes" then "Ruby's prelude and bundler/setup"
                  when "no" then "Ruby's prelude (no Gemfile: Bundler's files are not in it)"
                  else "Ruby's prelude (bundler/setup failed: #{bundler}; Bundler's files are not in it)"
                  end
        out.puts "loadout prelude: #{summary["files"]} files that #{started} loaded, compiled for Ruby " \
                 "#{RUBY_VERSION} into #{image} (#{(summary["bytes"].to_i / 1024.0).round} KiB)."
        out.puts
        out.puts "Put #{dir} on RUBYLIB wherever the app's processes start (each Ruby finds its own image there;"
        out.puts "run `loadout prelude` again with each Ruby, and after upgrading Ruby, RubyGems or Bundler):"
        out.puts "  Dockerfile:  ENV RUBYLIB=#{rubylib_line(dir)}"
        out.puts "  CI:          export RUBYLIB=#{rubylib_line(dir)}"
        out.puts "  one command: export $(bundle exec loadout prelude --env)"
        out.puts
        out.puts "A file changed since (another size or mtime) is compiled by Ruby as usual; without the directory, " \
                 "Ruby starts as it always does."
      end
    end
  end
end

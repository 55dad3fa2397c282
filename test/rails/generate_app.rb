# frozen_string_literal: true

# Generates the real Rails 7.2 app that the tests under test/rails boot with and without loadout.
# It is built at test time, never vendored: `rails new` (sqlite3) from the bundle in
# test/rails/Gemfile (bin/setup-deps installs it into vendor/rails-bundle), a dozen scaffolds, a
# namespaced model (billing.rb + billing/invoice.rb, an explicit namespace), then the files of
# test/rails/app_template copied over it (a concern, an implicit namespace with no payments.rb, a
# custom autoload path lib/extras, YAML locales, on_load probes, seeds), `require "loadout/setup"`
# in config/boot.rb, and the dev, test and production databases. The app's Gemfile is
# test/rails/Gemfile plus `gem "loadout", path: <repo>`, installed with `bundle install --local`:
# generating needs no network.
#
# The app lives in tmp/rails_app/<digest of this file, the template, the Gemfile and lock, the
# repo path and Ruby's version>, reused while those do not change (a fresh clone generates it).
#
#   ruby test/rails/generate_app.rb            # prints the app's path, generating it when needed
#   ruby test/rails/generate_app.rb --gemfile  # prints the Gemfile this Ruby uses (bin/setup-deps)
require "digest"
require "fileutils"
require "open3"
require "rbconfig"

module RailsAppGenerator
  REPO = File.expand_path("../..", __dir__)
  # One lock per Ruby range: 3.1-3.3 use Gemfile; from 3.4 on, the nokogiri and sqlite3 of that
  # lock do not install (their x86_64-linux gems require Ruby < 3.4), Gemfile.ruby34 takes lines
  # that do.
  GEMFILE = File.join(__dir__, RUBY_VERSION >= "3.4" ? "Gemfile.ruby34" : "Gemfile")
  TEMPLATE = File.join(__dir__, "app_template")
  BUNDLE_PATH = File.join(REPO, "vendor/rails-bundle")
  APPS_DIR = File.join(REPO, "tmp/rails_app")
  DONE_MARKER = ".generated"
  # A throwaway key: production boots need one, the app has no secret worth keeping.
  SECRET_KEY_BASE = "0" * 128

  # What the app does not need to be a real app for require/autoload purposes: no JavaScript
  # bundling (it would need node and more gems), no bootsnap (loadout is the boot cache under
  # test), no git, Docker, CI or linters, no browser-driven system tests, and no network install
  # (the Gemfile is rewritten and installed from vendor/rails-bundle below).
  RAILS_NEW_OPTIONS = %w[--name=shop --database=sqlite3 --skip-bundle --skip-git --skip-docker --skip-javascript
                         --skip-hotwire --skip-bootsnap --skip-dev-gems --skip-rubocop --skip-brakeman --skip-ci
                         --skip-system-test --skip-decrypted-diffs --quiet].freeze

  # Scaffolds: model, migration, controller, views (HTML and jbuilder), routes, tests, fixtures.
  SCAFFOLDS = [
    %w[Post title:string body:text published:boolean],
    %w[Comment post:references body:text],
    %w[Author name:string email:string],
    %w[Tag name:string],
    %w[Category name:string position:integer],
    %w[Product name:string sku:string price:decimal],
    %w[Order number:string total:decimal],
    %w[LineItem order:references product:references quantity:integer],
    %w[Customer name:string email:string],
    %w[Project name:string],
    %w[Task project:references title:string done:boolean],
    %w[Event name:string starts_at:datetime]
  ].freeze

  # Variables that would make a child use another bundle or Ruby setup than the app's own: the
  # tests run under `bundle exec` of loadout's main bundle.
  LEAKY = /\A(BUNDLE_|BUNDLER_|GEM_HOME\z|GEM_PATH\z|RUBYOPT\z|RUBYLIB\z|RAILS_ENV\z|RACK_ENV\z|LOADOUT_)/

  module_function

  # The environment of every child that runs the app: nothing inherited that could change a boot,
  # except LOADOUT_PURE (the backend under test), then +extra+.
  def clean_env(extra = {})
    env = ENV.keys.grep(LEAKY).to_h { |k| [k, nil] }
    env["LOADOUT_PURE"] = ENV["LOADOUT_PURE"]
    env.merge(extra)
  end

  def digest
    inputs = [File.expand_path(__FILE__), GEMFILE, "#{GEMFILE}.lock", *Dir.glob("#{TEMPLATE}/**/*", File::FNM_DOTMATCH)]
    files = inputs.select { |f| File.file?(f) }.sort
    Digest::SHA256.hexdigest([REPO, RUBY_VERSION, *files.map { |f| "#{f}\0#{File.binread(f)}" }].join("\0"))[0, 16]
  end

  # The app's path, generated first unless already there. Safe to call from concurrent processes.
  def path(log: $stderr)
    dir = File.join(APPS_DIR, digest)
    return dir if File.exist?(File.join(dir, DONE_MARKER))

    FileUtils.mkdir_p(APPS_DIR)
    File.open(File.join(APPS_DIR, ".lock"), File::RDWR | File::CREAT) do |lock|
      lock.flock(File::LOCK_EX)
      generate(dir, log: log) unless File.exist?(File.join(dir, DONE_MARKER))
    end
    dir
  end

  def generate(dir, log:)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # Apps of older digests are dead weight; a half-built app of this digest is rebuilt.
    Dir.glob("#{APPS_DIR}/*").each { |old| FileUtils.rm_rf(old) }
    rails_new(dir)
    install_bundle(dir)
    generate_code(dir)
    FileUtils.cp_r("#{TEMPLATE}/.", dir)
    patch_boot(dir)
    patch_application(dir)
    %w[development test production].each do |rails_env|
      env = { "RAILS_ENV" => rails_env, "SECRET_KEY_BASE" => SECRET_KEY_BASE }
      run!(dir, RbConfig.ruby, "bin/rails", "db:prepare", env: env)
    end
    File.write(File.join(dir, DONE_MARKER), "")
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    log&.puts format("rails app generated in %.1f s: %s", seconds, dir)
  end

  def rails_new(dir)
    bundle_env = { "BUNDLE_GEMFILE" => GEMFILE, "BUNDLE_PATH" => BUNDLE_PATH }
    run!(REPO, "bundle", "exec", "rails", "new", dir, *RAILS_NEW_OPTIONS, env: bundle_env)
  end

  # The app resolves against the gems already in vendor/rails-bundle: the lock of test/rails, plus the
  # loadout path gem, installed with --local (no network).
  def install_bundle(dir)
    File.write(File.join(dir, "Gemfile"), <<~RUBY)
      # frozen_string_literal: true

      source "https://rubygems.org"

      eval_gemfile #{GEMFILE.dump}
      gem "loadout", path: #{REPO.dump}
    RUBY
    FileUtils.cp("#{GEMFILE}.lock", File.join(dir, "Gemfile.lock"))
    FileUtils.mkdir_p(File.join(dir, ".bundle"))
    File.write(File.join(dir, ".bundle/config"), "---\nBUNDLE_PATH: #{BUNDLE_PATH.dump}\n")
    run!(dir, "bundle", "install", "--local", "--quiet")
  end

  # All scaffolds and the namespaced model in one boot of the app (a `bin/rails generate` each
  # would boot it 13 times).
  def generate_code(dir)
    script = File.join(dir, "tmp/generate_code.rb")
    FileUtils.mkdir_p(File.dirname(script))
    generators = SCAFFOLDS.map { |args| ["scaffold", *args] }
    generators << %w[model Billing::Invoice number:string amount:decimal]
    File.write(script, <<~RUBY)
      require "rails/generators"
      Rails.application.load_generators
      #{generators.inspect}.each do |name, *args|
        Rails::Generators.invoke(name, args, behavior: :invoke, destination_root: Rails.root.to_s)
      end
    RUBY
    run!(dir, RbConfig.ruby, "bin/rails", "runner", script)
    FileUtils.rm_f(script)
  end

  # loadout goes right after bundler/setup, as the README tells users.
  def patch_boot(dir)
    edit(File.join(dir, "config/boot.rb"), /^require "bundler\/setup".*\n/) do |line|
      "#{line}require \"loadout/setup\" # Boot cache (the app's Gemfile has it as a path gem).\n"
    end
  end

  # A custom autoload path: lib/extras holds top-level constants (it is also a nested root inside
  # lib/, which autoload_lib already manages; Zeitwerk treats nested roots as separate roots).
  def patch_application(dir)
    edit(File.join(dir, "config/application.rb"), /^    config\.autoload_lib.*\n/) do |line|
      "#{line}    config.autoload_paths << \"\#{root}/lib/extras\"\n"
    end
  end

  def edit(file, pattern)
    text = File.read(file)
    raise "#{file}: no line matches #{pattern.inspect}" unless text.match?(pattern)

    File.write(file, text.sub(pattern) { |line| yield line })
  end

  # Generation runs plain Ruby (LOADOUT_DISABLE=1): the app must be there even when loadout breaks.
  def run!(dir, *cmd, env: {})
    out, status = Open3.capture2e(clean_env({ "LOADOUT_DISABLE" => "1" }.merge(env)), *cmd, chdir: dir)
    raise "generating the Rails app: `#{cmd.join(" ")}` failed (#{status}) in #{dir}:\n#{out}" unless status.success?

    out
  end
end

if $PROGRAM_NAME == __FILE__
  puts ARGV == ["--gemfile"] ? RailsAppGenerator::GEMFILE : RailsAppGenerator.path
end

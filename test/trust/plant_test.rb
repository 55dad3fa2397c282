# frozen_string_literal: true

require "test_helper"
require "support/trust_boot"

# Another user plants an ISeq for one of the app's files with loadout's own API: an entry that
# passes every freshness check (the file's real stat and digest) but whose code says "PWNED".
# Wherever that user could write (a 0777 cache dir, a group-writable one shared with them, a
# cache dir they made first in a sticky /tmp-like dir), the app's boot (as root) never loads it.
# Each test ends with the control: the same planted store, made to pass the rule by root, does
# run the planted code, so it is the rule that stopped it.
class TrustPlantTest < Minitest::Test
  include Loadout::TestSupport::TrustBoot

  # Run as nobody: writes a store at +cache+/store whose entry for +target+ runs +evil+.
  PLANT = <<~'RUBY'
    require "loadout"
    require "loadout/store"
    require "loadout/compile_cache"
    cache, target, evil_dir = ARGV
    cc = Loadout::CompileCache
    evil = File.join(evil_dir, "evil.rb")
    File.write(evil, "puts \"PWNED as \#{Process.uid}\"\n")
    options = RubyVM::InstructionSequence.compile_option
    key = cc::Key.new([File.dirname(File.dirname(target))])
    variant = key.variant(:iseq, options.sort_by { |k, _| k.to_s }.inspect)
    binary = cc::ISeqBinary.rewrite(RubyVM::InstructionSequence.compile_file(evil, options).to_binary,
                                    { evil => target }, labels: true)
    identity = cc::Freshness.identity(target)
    verified = identity[2] + 10_000_000_000 # well past the racy window of the file's ctime
    entry = cc::Entry.dump(cc::Entry::RAW, identity, verified, cc::XXH64.digest(File.binread(target)), binary,
                           path: target, realpath: target)
    Loadout::Store.open(File.join(cache, "store")) { |s| s.put(key.for("i", variant, target), entry) }
    puts "planted"
  RUBY

  def plant(cache, app, groups: [])
    evil_dir = File.join(File.dirname(app), "evil")
    FileUtils.mkdir_p(evil_dir)
    File.chmod(0o777, evil_dir)
    out = as_nobody(PLANT, [cache, File.join(app, "lib/a.rb"), evil_dir], groups: groups)
    assert_equal "planted\n", out
    store = File.join(cache, "store")
    assert_equal NOBODY, File.stat(store).uid, "the store is the other user's"
  end

  # The control: root takes the planted files over (as if the rule did not exist); the planted
  # code then runs in the app's boot.
  def assert_planted_code_would_run(app, cache, env: {})
    FileUtils.chown_R(0, 0, cache)
    File.chmod(0o700, cache)
    boot = trust_boot(app, cache, env: env)
    assert_includes boot.stdout, "PWNED as 0", "the planted entry is live once trusted:\n#{boot.stderr}"
  end

  test "an ISeq planted by another user through a 0777 cache dir never reaches load_from_binary" do
    with_trust_app do |app, cache|
      FileUtils.mkdir_p(cache)
      File.chmod(0o777, cache)
      plant(cache, app)
      boot = trust_boot(app, cache)
      assert_refused(boot, app, cache, /writable by others/)
      refute_includes boot.stdout, "PWNED"
      assert_planted_code_would_run(app, cache)
    end
  end

  test "a group member's planted store is refused even when the group is trusted (trust_shared_cache)" do
    with_trust_app do |app, cache|
      warm_up(app, cache, env: { "T_SHARED" => "1" })
      open_path_to(app, cache, gid: USERS_GID)
      File.chmod(0o770, cache)
      FileUtils.rm_f(Dir.glob(File.join(cache, "store*")))
      plant(cache, app, groups: [USERS_GID])
      boot = trust_boot(app, cache, env: { "T_SHARED" => "1" })
      assert_refused(boot, app, File.join(cache, "store"), /owned by another user/)
      refute_includes boot.stdout, "PWNED"
      assert_planted_code_would_run(app, cache, env: { "T_SHARED" => "1" })
    end
  end

  test "a cache dir another user made first in a cold sticky 1777 dir is refused" do
    with_trust_app do |app, _|
      pub = File.join(File.dirname(app), "pub")
      Dir.mkdir(pub)
      File.chmod(0o1777, pub)
      cache = File.join(pub, "cache")
      as_nobody("Dir.mkdir(ARGV[0], 0o755)", [cache])
      plant(cache, app)
      boot = trust_boot(app, cache)
      assert_refused(boot, app, cache, /owned by another user/)
      refute_includes boot.stdout, "PWNED"
      assert_planted_code_would_run(app, cache)
    end
  end

  test "a self cache planted by another user is never read inside Loadout.setup" do
    skip "the self cache is native only" unless Loadout::BACKEND == :native
    with_trust_app do |app, cache|
      warm_up(app, cache)
      self_file = Dir.glob(File.join(cache, "store.self-*")).first
      File.chmod(0o644, self_file) # (readable, so the other user can copy it)
      open_path_to(app, cache)
      File.chmod(0o777, cache)
      copy_over = "File.binwrite(ARGV[0] + '.new', File.binread(ARGV[0])); File.rename(ARGV[0] + '.new', ARGV[0])"
      as_nobody(copy_over, [self_file])
      File.chmod(0o700, cache)
      assert_equal NOBODY, File.stat(self_file).uid
      boot = trust_boot(app, cache)
      assert_refused(boot, app, self_file, /owned by another user/)
    end
  end
end

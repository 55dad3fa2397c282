# frozen_string_literal: true

require "test_helper"
require "loadout/store"
require "loadout/compile_cache/job_file"
require "loadout/compile_cache/writer"

# The worker's job file is plain lines (written by Writer.job_text) parsed strictly (JobFile, never
# Marshal), read only when it passes the trust rule, removed whatever happens; the worker keeps to
# its time budget.
class CompileWorkerJobTest < Minitest::Test
  JobFile = Loadout::CompileCache::JobFile
  Writer = Loadout::CompileCache::Writer
  OPTIONS = RubyVM::InstructionSequence.compile_option

  def with_job
    with_files([["app/lib/a.rb", "A = 1\n"], ["app/lib/b.rb", "B = 2\n"], ["cache/"]]) do |dir|
      app = File.join(dir, "app")
      store = File.join(dir, "cache/store")
      files = %w[a b].map { |f| File.join(app, "lib/#{f}.rb") }
      text = Writer.job_text(store, false, [app], [["0123456789abcdef", OPTIONS, files]], nil)
      job = File.join(dir, "cache/store.compile-1.test.jobs")
      File.write(job, text)
      File.chmod(0o600, job)
      yield job, store, [store, [app], [["0123456789abcdef", OPTIONS, files]], nil]
    end
  end

  def run_worker(job, args = "", prelude: "")
    script = "require 'loadout/compile_cache/worker'\n#{prelude}\nLoadout::CompileCache::Worker.run(ARGV[0]#{args})"
    run_ruby(script, args: [job])
  end

  def stored(store)
    return 0 unless File.exist?(store)

    Loadout::Store.open(store, readonly: true) { |s| s.each.count }
  end

  test "a job compiles its files and its file is removed" do
    with_job do |job, store|
      assert run_worker(job).success?
      assert_equal 2, stored(store)
      refute File.exist?(job)
    end
  end

  test "a Marshal job file (the old format) is never loaded, and removed" do
    with_job do |job, store, old_job|
      File.binwrite(job, Marshal.dump(old_job))
      flag = "#{store}.marshal-called"
      spy = "Marshal.singleton_class.prepend(Module.new { def load(*a) = File.write(#{flag.dump}, '1') && super })"
      assert run_worker(job, prelude: spy).success?
      refute File.exist?(flag), "Marshal.load was called on the job file"
      assert_equal 0, stored(store)
      refute File.exist?(job)
    end
  end

  test "a job file that is a symlink or another user's is not read" do
    with_job do |job, store|
      real = "#{job}.real"
      File.rename(job, real)
      File.symlink(real, job)
      assert run_worker(job).success?
      assert_equal 0, stored(store)
      refute File.symlink?(job), "the link is removed"
      assert File.exist?(real), "not what it points to"
      File.rename(real, job)
      File.chown(65_534, nil, job)
      assert run_worker(job).success?
      assert_equal 0, stored(store)
    end
  end

  test "time budget: no file is started after it, and the process is gone at the hard limit" do
    with_job do |job, store|
      assert run_worker(job, ", budget: 0").success?
      assert_equal 0, stored(store), "past the budget nothing is compiled"
      refute File.exist?(job)
    end
    with_job do |job, store|
      stuck = "Loadout::CompileCache::ISeq.singleton_class.prepend(Module.new { def build(*) = sleep })"
      result = run_worker(job, ", hard_limit: 1", prelude: stuck)
      assert_equal 1, result.status.exitstatus, "exit!(1) from the watchdog"
      assert_equal 0, stored(store)
      refute File.exist?(job), "the job file was removed before compiling"
    end
  end

  test "the job format round-trips paths of any bytes and encoding, and rejects anything out of place" do
    paths = ["/a b/%x.rb", "/é.rb", "/\xFF.rb".b, "/new\nline.rb"]
    text = Writer.job_text("/s/store", true, ["/r"], [["v1", OPTIONS, paths]], ["/s/store.self-1", ["/l/x.rb"], OPTIONS])
    job = JobFile.parse(text)
    assert_equal ["/s/store", true, ["/r"]], [job.store_path, job.shared, job.roots]
    assert_equal [["v1", OPTIONS, paths]], job.groups
    assert_equal paths.map(&:encoding), job.groups[0][2].map(&:encoding)
    assert_equal ["/s/store.self-1", ["/l/x.rb"], OPTIONS], job.self_job
    lines = text.lines
    [text.sub("end\n", ""), "#{text}x\n", text.sub("shared 1", "shared  1"), text.sub("shared 1", "shared yes"),
     text.sub("UTF-8:/r", "external:/r"), text.sub("UTF-8:/r", "UTF-8:/r%G0"), text.sub("UTF-8:/r", "UTF-8:"),
     text.sub("option debug_level 0", "option debug_level nil"), text.sub("store ", "stor "),
     (lines[0, 3] + ["file UTF-8:/x\n"] + lines[3..]).join, lines.rotate(1).join, "", Marshal.dump([1])].each do |bad|
      assert_nil JobFile.parse(bad), bad.inspect
    end
    assert_nil Writer.job_text("/s", false, [], [["v", { debug_level: "1" }, []]], nil), "an option loadout cannot write"
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/rake_project"

# One stat per path per run: in a no-op run, each object task costs its own stat plus its
# source's (the source is a synthesized FileTask), and each shared header is stat'd once.
class RakeStatCountTest < Minitest::Test
  P = Loadout::TestSupport::RakeProject
  OBJECTS = 60
  HEADERS = 6

  RAKEFILE = <<~RUBY
    HEADERS = Array.new(#{HEADERS}) { |k| "include/h\#{k}.h" }
    OBJECTS = Array.new(#{OBJECTS}) { |i| "obj/o\#{i}.o" }
    OBJECTS.each_with_index do |obj, i|
      file obj => ["src/o\#{i}.c", *HEADERS] do |t|
        File.write(t.name, "built")
      end
    end
    task default: OBJECTS
  RUBY

  COUNT = <<~'RUBY'
    require "rake"
    app = Rake.application
    app.init
    app.load_rakefile
    require "support/rake_stat_counter"
    app.top_level
    warn "STATS=#{Loadout::TestSupport::RakeStatCounter.count}"
  RUBY

  def write_project(dir)
    File.write(File.join(dir, "Rakefile"), RAKEFILE)
    HEADERS.times { |k| P.write(dir, "include/h#{k}.h", "h", P::BASE_TIME) }
    OBJECTS.times do |i|
      P.write(dir, "src/o#{i}.c", "c", P::BASE_TIME)
      P.write(dir, "obj/o#{i}.o", "o", P::BASE_TIME + 10)
    end
  end

  def stat_calls(dir, rake_lib, loadout:)
    opts = ["-I", rake_lib, "-I", P::SUPPORT]
    opts += ["-I", P::LIB, "-rloadout/rake"] if loadout
    out, err, status = Open3.capture3({ "RUBYOPT" => nil }, RbConfig.ruby, *opts, "-e", COUNT, chdir: dir)
    assert status.success?, "rake failed:\n#{out}\n#{err}"
    Integer(err[/^STATS=(\d+)$/, 1])
  end

  P.rake_libs.each do |rake_lib|
    version = P.rake_version(rake_lib)

    test "a no-op run stats each path once (rake #{version})" do
      with_files do |dir|
        write_project(dir)
        stock = stat_calls(dir, rake_lib, loadout: false)
        loadout = stat_calls(dir, rake_lib, loadout: true)
        # Object + its source per object task; each header once.
        assert_operator loadout, :<=, 2 * OBJECTS + HEADERS
        assert_operator loadout.fdiv(OBJECTS), :<=, 2.1
        # Stock Rake re-stats the headers for every object: the bound above is not a given.
        assert_operator stock, :>, 2 * (2 * OBJECTS + HEADERS)
      end
    end
  end

  test "strace sees at most 2 stat calls per object task more than a run that builds nothing" do
    skip "strace not installed" unless File.executable?("/usr/bin/strace")

    with_files do |dir|
      write_project(dir)
      File.write(File.join(dir, "Rakefile"), "#{RAKEFILE}task :baseline\n")
      rake_lib = P.rake_libs.first
      counts = ["default", "baseline"].map do |task|
        _, err, status = Open3.capture3(
          { "RUBYOPT" => nil }, "/usr/bin/strace", "-f", "-c", "-e", "trace=stat,lstat,newfstatat,statx",
          RbConfig.ruby, "-I", rake_lib, "-I", P::LIB, "-rloadout/rake",
          "-e", 'require "rake"; Rake.application.run', "--", task,
          chdir: dir
        )
        skip "strace cannot trace here: #{err.lines.first}" unless status.success? && err.include?("total")
        err[/^\S+\s+\S+\s+\S+\s+(\d+)(?:\s+\d+)?\s+total$/, 1].to_i
      end
      assert_operator counts[0] - counts[1], :<=, 2 * OBJECTS + HEADERS
    end
  end
end

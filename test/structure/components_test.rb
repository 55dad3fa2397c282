# frozen_string_literal: true

require "test_helper"
require "tsort"

# The components of lib/loadout and who may use whom (docs/ARCHITECTURE.md, "Components"). A
# component is a folder of lib/loadout with the file of the same name (compile_cache/ and
# compile_cache.rb), or a file alone. A file uses another component when it requires one of its
# files (require_relative) or names its constant (CompileCache::Key, Boot.config, Trust.walk);
# comments do not count. The graph must be the allowed one, and acyclic.
class ComponentsTest < Minitest::Test
  LIB = File.expand_path("../../lib/loadout", __dir__)

  # component => the components it may use. Read top to bottom: the entry points, the boot, the
  # components it installs, the store, and the utilities everything may use.
  ALLOWED = {
    "loadout" => %w[boot config error instrumentation native self_cache stats version],
    "setup" => %w[env],
    "env" => %w[loadout app_root config error native],
    "rake" => %w[rake_memo],
    "rake_tasks" => %w[cli error],
    "rake_memo" => %w[],
    "prelude" => %w[loadout compile_cache trust],
    "cli" => %w[loadout env boot compile_cache load_path store config eviction last_boot loaded_files self_cache scan
                trust gc_settings app_root error native version],
    "boot" => %w[compile_cache load_path store config eviction last_boot loaded_files stats trust error
                 instrumentation native],
    "self_cache" => %w[compile_cache trust native error version],
    "stats" => %w[instrumentation native error],
    "eviction" => %w[compile_cache load_path],
    "last_boot" => %w[trust gc_settings],
    "gc_settings" => %w[],
    "loaded_files" => %w[],
    "compile_cache" => %w[loaded_files store trust config error instrumentation native],
    "load_path" => %w[scan config instrumentation native error],
    "journal" => %w[store binary_file trust error native],
    "store" => %w[binary_file trust error instrumentation native],
    "trust" => %w[error native],
    "config" => %w[app_root error],
    "scan" => %w[native error],
    "native" => %w[error loadout_ext],
    "app_root" => %w[], "binary_file" => %w[], "error" => %w[], "instrumentation" => %w[], "version" => %w[]
  }.freeze

  def component_of(path)
    return "loadout" if path == File.expand_path("..", LIB) + "/loadout.rb"

    rel = path.delete_prefix("#{LIB}/")
    rel.include?("/") ? rel.split("/").first : rel.delete_suffix(".rb").delete_suffix(".so")
  end

  def constant_names
    names = (Dir.children(LIB).map { |f| f.delete_suffix(".rb") }.uniq - %w[loadout_ext]).to_h do |c|
      [c.split("_").map(&:capitalize).join.sub(/\ACli\z/, "CLI").sub(/\AGc/, "GC"), c]
    end
    # Loadout.setup is a method, not the component; loadout/rake defines no constant (Rake is Rake's).
    names.merge("Setup" => nil, "Rake" => nil)
  end

  # { component => { used component => "file: what" } }
  def edges
    files = Dir["#{LIB}/**/*.rb"] + [File.expand_path("..", LIB) + "/loadout.rb"]
    consts = constant_names
    files.each_with_object(Hash.new { |h, k| h[k] = {} }) do |file, out|
      from = component_of(file)
      code = File.read(file).gsub(/^\s*#.*$/, "").gsub(/ #(?![{]).*$/, "")
      code.scan(/require_relative\s+"([^"]+)"/) do |(target)|
        to = component_of(File.expand_path(target, File.dirname(file)) + ".rb")
        out[from][to] ||= "#{file.delete_prefix("#{LIB}/")}: require_relative #{target.inspect}" unless to == from
      end
      code.scan(/(?<![\w:.])([A-Z][A-Za-z]+)(?=\.|::)/) do |(name)|
        to = consts[name]
        next if to.nil? || to == from

        out[from][to] ||= "#{file.delete_prefix("#{LIB}/")}: #{name}"
      end
    end
  end

  test "every component uses only the components it is allowed to" do
    unknown = edges.keys - ALLOWED.keys
    assert_empty unknown, "components missing from ALLOWED (add them, with their edges)"
    extra = edges.flat_map do |from, tos|
      tos.reject { |to, _| ALLOWED.fetch(from).include?(to) }.map { |to, why| "#{from} -> #{to} (#{why})" }
    end
    assert_empty extra, "edges not in ALLOWED"
  end

  test "the allowed graph is acyclic, so the real one is" do
    graph = Class.new do
      include TSort

      def initialize(graph)
        @graph = graph
      end

      def tsort_each_node(&block)
        @graph.each_key(&block)
      end

      def tsort_each_child(node, &block)
        @graph.fetch(node, []).each(&block)
      end
    end
    cycles = graph.new(ALLOWED).strongly_connected_components.select { |c| c.size > 1 }
    assert_empty cycles
  end

  test "the checker sees the edges it polices (a file that names Boot uses boot)" do
    found = edges
    assert_match(/Boot/, found.dig("loadout", "boot").to_s)
    assert_match(/require_relative "env"/, found.dig("setup", "env").to_s)
    assert_match(/CompileCache/, found.dig("self_cache", "compile_cache").to_s)
  end
end

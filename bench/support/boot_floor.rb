# frozen_string_literal: true

# rubocop:disable Security/MarshalLoad -- it loads only the files it wrote itself (learn)

# The floor of a boot cache, for bench/boot.rb's "floor_warm", "floor_lp_warm" and "floor_cold"
# scenarios: what a boot would cost if a cache did its job for free. The generated Bundler-layout
# app's boot.rb loads this file when BENCH_MODE is "floor" and calls BootFloor.start.
#
# - learn (BENCH_FLOOR_PHASE=learn, untimed, once): a plain boot that records, for every
#   `require` of a feature, the path Ruby resolves it to, and at exit the instruction-sequence
#   binary of every Ruby file it loaded and the value of every YAML/JSON file it read (Marshal),
#   in one Marshal file read back whole by the timed boots (the paths alone also in
#   "<file>.resolved", for the load-path floor).
# - warm: every `require` gets the recorded absolute path (a Hash lookup, no $LOAD_PATH walk),
#   every file's instruction sequence comes from load_from_binary of the binary already in memory,
#   every YAML/JSON value from Marshal.load of bytes already in memory: no lookup structure, stat,
#   read, digest or check of any kind. What is left is what every cache's warm boot pays: Ruby's
#   require bookkeeping, load_from_binary, running the files, rebuilding the data, the GC.
# - lp: the paths only, as warm; Ruby compiles every file (the floor of a load-path cache alone).
# - cold: requires resolved as warm (a cold cache would have to scan for them: left out, so the
#   floor stays a floor), every file compiled from source as plain Ruby does, plus to_binary of
#   each (kept in memory, never written): the least a cache that keeps compiled code must add to
#   a boot that compiles, when it does its serialising in the boot's own process.
#
# Reading the floor's file (one read, one Marshal.load) is part of the timed boot: the floor is,
# if anything, pessimistic.
module BootFloor
  module_function

  def start(phase, file)
    case phase
    when "learn" then learn(file)
    when "warm" then warm(Marshal.load(File.binread(file)))
    when "lp" then resolve_from(Marshal.load(File.binread("#{file}.resolved")))
    when "cold" then cold(Marshal.load(File.binread("#{file}.resolved")))
    else raise ArgumentError, "BENCH_FLOOR_PHASE: expected learn, warm, lp or cold, got #{phase.inspect}"
    end
  end

  def learn(file)
    resolved = {}
    values = {}
    decorate_require do |original, receiver, feature|
      if feature.is_a?(String) && !resolved.key?(feature) && !File.absolute_path?(feature)
        type, path = $LOAD_PATH.resolve_feature_path(feature)
        resolved[feature] = path if type
      end
      original.bind_call(receiver, feature)
    end
    on_load_file(:learn) { |_mod, path, value| values[File.expand_path(path)] = Marshal.dump(value) }
    at_exit do
      iseqs = $LOADED_FEATURES.grep(/\.rb\z/).select { |path| File.absolute_path?(path) }.to_h do |path|
        [path, RubyVM::InstructionSequence.compile_file(path).to_binary]
      end
      File.binwrite(file, Marshal.dump({ resolved: resolved, iseqs: iseqs, values: values }))
      File.binwrite("#{file}.resolved", Marshal.dump(resolved))
    end
  end

  def warm(floor)
    resolve_from(floor[:resolved])
    iseqs = floor[:iseqs]
    answer_load_iseq { |path| (binary = iseqs[path]) && RubyVM::InstructionSequence.load_from_binary(binary) }
    values = floor[:values]
    on_load_file(:serve) { |_mod, path| (bytes = values[File.expand_path(path)]) && Marshal.load(bytes) }
  end

  def cold(resolved)
    resolve_from(resolved)
    kept = []
    answer_load_iseq do |path|
      iseq = RubyVM::InstructionSequence.compile_file(path)
      kept << iseq.to_binary
      iseq
    end
  end

  def resolve_from(resolved)
    decorate_require { |original, receiver, feature| original.bind_call(receiver, resolved.fetch(feature, feature)) }
  end

  # Replaces Kernel#require (the app's boot.rb already made it Ruby's own) with a block that gets
  # the original, the receiver and the feature, the way a load-path cache decorates it.
  def decorate_require(&block)
    original = Kernel.instance_method(:require)
    Kernel.send(:define_method, :require) { |feature| block.call(original, self, feature) }
    Kernel.send(:private, :require)
  end

  def answer_load_iseq(&block)
    RubyVM::InstructionSequence.singleton_class.prepend(Module.new do
      define_method(:load_iseq) { |path| block.call(path) }
    end)
  end

  # YAML.load_file / JSON.load_file: :learn records each value after the real call, :serve answers
  # from the block (the real call when it has nothing).
  def on_load_file(mode, &block)
    require "yaml"
    require "json"
    [YAML, JSON].each do |mod|
      mod.singleton_class.prepend(Module.new do
        define_method(:load_file) do |path, *args, **kw|
          if mode == :serve
            value = block.call(mod, path)
            next value unless value.nil?
          end
          value = super(path, *args, **kw)
          block.call(mod, path, value) if mode == :learn
          value
        end
      end)
    end
  end
end

# frozen_string_literal: true

module Loadout
  module Rake
    # Decides whether the running Rake is one loadout/rake knows how to patch, and which shape of
    # FileTask#needed?/#timestamp it has. Detection uses Rake::VERSION and the methods themselves:
    # each must exist and still be Rake's own (not redefined by someone else), or nothing is
    # patched. After install, redefining a patched method turns every patch off (see #watch).
    module Support # :nodoc:
      # The FileTask shape changed in 13.1 (exist? + mtime -> mtime rescuing ENOENT, ruby/rake#393).
      MTIME_RESCUE_SINCE = Gem::Version.new("13.1.0")
      OLDEST = Gem::Version.new("12.3.0")
      NEWEST_MAJOR = 13

      # Stock methods the patches stand in for, by class.
      PATCHED = {
        "Rake::Task" => %i[invoke execute invoke_with_call_chain invoke_prerequisites prerequisite_tasks
                           collect_prerequisites all_prerequisite_tasks lookup_prerequisite],
        "Rake::FileTask" => %i[needed? timestamp out_of_date?],
        "Rake::FileCreationTask" => %i[needed? timestamp],
        "Rake::Application" => %i[[] lookup intern clear synthesize_file_task define_task top_level],
      }.freeze

      class << self
        # Returns [variant, nil] when supported (variant :exist_check or :mtime_rescue), or
        # [nil, "reason"].
        def check(version = rake_version) #: (String?) -> [Symbol?, String?]
          return [nil, "Rake::VERSION is not defined"] unless version

          v = Gem::Version.new(version)
          if v < OLDEST || v.segments.first > NEWEST_MAJOR
            return [nil, "rake #{version} is not supported (12.3 through 13.x are)"]
          end

          unless defined?(::Rake::Backtrace) && ::Rake::Backtrace.respond_to?(:collapse)
            return [nil, "rake #{version} lacks Rake::Backtrace.collapse"]
          end

          missing = missing_methods
          return [nil, "rake #{version} lacks #{missing.join(", ")}"] unless missing.empty?

          foreign = foreign_methods
          return [nil, "#{foreign.join(", ")} already redefined outside rake"] unless foreign.empty?

          [v < MTIME_RESCUE_SINCE ? :exist_check : :mtime_rescue, nil]
        rescue ArgumentError => e # a malformed version string
          [nil, "rake version #{version.inspect} is not understood (#{e.message})"]
        end

        def rake_version #: () -> String?
          defined?(::Rake::VERSION) ? ::Rake::VERSION.to_s : nil
        end

        def missing_methods #: () -> Array[String]
          each_patched.reject { |klass, m| klass && has_method?(klass, m) }.map { |klass, m| label(klass, m) }
        end

        # Patched methods whose definition does not come from rake's own files.
        def foreign_methods #: () -> Array[String]
          each_patched.select do |klass, m|
            file, = klass.instance_method(m).source_location
            file && !file.include?("/rake/") && !file.end_with?("/rake.rb")
          end.map { |klass, m| label(klass, m) }
        end

        # Turns all patches off (empties the prepended modules) and warns once if one of
        # +classes+ later gets a patched method redefined: the patch would hide the new code.
        def watch(classes, patch_modules) #: (Array[Module], Array[Module]) -> void
          names = patch_modules.flat_map { |mod| mod.instance_methods(false) + mod.private_instance_methods(false) }
          watched = classes
          hook = Module.new do
            define_method(:method_added) do |name|
              super(name)
              Support.redefined(self, name, patch_modules) if names.include?(name) && watched.include?(self)
            end
          end
          classes.each { |klass| klass.singleton_class.prepend(hook) }
        end

        def redefined(klass, name, patch_modules) #: (Module, Symbol, Array[Module]) -> void
          return if @off

          @off = true
          Run.disable!
          patch_modules.each do |mod|
            (mod.instance_methods(false) + mod.private_instance_methods(false)).each { |m| mod.send(:remove_method, m) }
          end
          warn "loadout: #{klass}##{name} was redefined after require \"loadout/rake\"; " \
               "loadout/rake is off for this process (require it after such patches)"
        end

        private

        def each_patched
          PATCHED.flat_map do |klass_name, methods|
            klass = klass_name.split("::").inject(Object) do |mod, c|
              mod && mod.const_defined?(c, false) ? mod.const_get(c, false) : nil
            end
            methods.map { |m| [klass, m] }
          end
        end

        def has_method?(klass, name)
          klass.method_defined?(name) || klass.private_method_defined?(name) || klass.protected_method_defined?(name)
        end

        def label(klass, name)
          "#{klass || "?"}##{name}"
        end
      end
    end
    private_constant :Support
  end
end

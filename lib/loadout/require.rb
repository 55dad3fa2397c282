# frozen_string_literal: true

module Loadout
  # The only monkey patch: Kernel#require, Kernel.require, Kernel#load and Kernel.load ask the
  # load path index first, then call the method they decorate, with the absolute path, so Ruby
  # keeps doing the loading, locking and $LOADED_FEATURES bookkeeping. Whatever the index cannot
  # prove goes to the decorated method unchanged.
  #
  # The modules are prepended once and stay (a prepended module cannot be removed); when the
  # index is uninstalled they only call super. Prepending to Kernel puts them in front of
  # RubyGems' Kernel#require (which stays next in the chain, and still sees every feature the
  # index hands over unresolved, so gem activation on demand is unchanged) and of any
  # alias-style decoration added later (Zeitwerk).
  module Require
    # Kernel#load and Kernel.load are decorated alike: relative paths that are not ./ or ../ are
    # searched in $LOAD_PATH, so the index answers them too.
    module Load # :nodoc:
      def load(file, *args)
        cache = LoadPath.__cache or return super
        abspath = cache.resolve(file, :load)
        return super if abspath.nil?

        begin
          super(abspath, *args)
        rescue LoadError => e
          raise unless e.path == abspath && cache.stale!(abspath)

          super(file, *args)
        end
      end
    end

    # Kernel#require / Kernel#load (private instance methods, what a bare `require` calls).
    module Instance # :nodoc:
      include Load
      private :load

      private

      def require(feature)
        cache = LoadPath.__cache or return super
        abspath = cache.resolve(feature, LoadPath.__rubygems_via)
        return super if abspath.nil?
        # :miss and :rubygems_miss are LoadPath::Cache::MISS and RUBYGEMS_MISS, spelled out:
        # Ruby 3.1 drops every constant cache whenever a class is defined (about once per
        # required file), so a constant named here would be looked up again on each require.
        return Require.__raise_load_error(feature) if abspath == :miss
        if abspath == :rubygems_miss
          return gem_original_require(feature) if Require.__try_activate(feature, cache)

          return Require.__raise_load_error(feature)
        end

        begin
          super(abspath)
        rescue LoadError => e
          raise unless e.path == abspath && cache.stale!(abspath)

          super(feature)
        end
      end
    end

    # Kernel.require / Kernel.load: the module functions, which RubyGems does not decorate.
    module Singleton # :nodoc:
      include Load

      def require(feature)
        cache = LoadPath.__cache or return super
        abspath = cache.resolve(feature, :plain)
        return super if abspath.nil?
        return Require.__raise_load_error(feature) if abspath == :miss # LoadPath::Cache::MISS

        begin
          super(abspath)
        rescue LoadError => e
          raise unless e.path == abspath && cache.stale!(abspath)

          super(feature)
        end
      end
    end

    class << self
      # The LoadError Ruby raises for a feature found nowhere (load.c load_failed).
      def __raise_load_error(feature) # :nodoc:
        error = LoadError.new("cannot load such file -- #{feature}")
        error.instance_variable_set(:@path, feature)
        # Drop our two frames so the backtrace starts at the require call, like Ruby's.
        error.set_backtrace(caller(2))
        raise error
      end

      # What RubyGems' Kernel#require does when Ruby's require raised LoadError for +feature+
      # (rubygems/core_ext/kernel_require.rb, its rescue clause): Gem.try_activate under the
      # activation monitor; when it activated a gem, RubyGems requires again with Ruby's own
      # require. The index proved the first attempt would fail, so it is skipped: a miss costs
      # what try_activate costs (a File.file? per installed gem and suffix), not a $LOAD_PATH
      # scan. An error from try_activate (version conflict) has the LoadError as cause, as in
      # RubyGems.
      def __try_activate(feature, cache) # :nodoc:
        error = LoadError.new("cannot load such file -- #{feature}")
        error.instance_variable_set(:@path, feature)
        begin
          raise error
        rescue LoadError
          activated = ::Kernel::RUBYGEMS_ACTIVATION_MONITOR.synchronize { Gem.try_activate(feature) }
        end
        cache.activated!(feature) if activated
        activated
      end

      def __install # :nodoc:
        return if @installed

        ::Kernel.prepend(Instance)
        ::Kernel.singleton_class.prepend(Singleton)
        @installed = true
      end
    end
  end
end

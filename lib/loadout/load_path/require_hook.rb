# frozen_string_literal: true

module Loadout
  module LoadPath
    # Where loadout's require goes: in place of Ruby's own C require, below every decorator.
    #
    # A process holds a chain of require decorators: RubyGems' Kernel#require (unless Bundler
    # removed it), Bundler's bundled-gems warning (Ruby 3.3), Zeitwerk's Kernel#require, Bootsnap,
    # an app's alias chain or prepended module. Each one ends by calling what it wrapped, by name
    # (gem_original_require, zeitwerk_original_require, require_without_bootsnap, super), and the
    # chain bottoms out in Ruby's C require. Every such name is a method entry of Kernel (or of
    # Kernel's singleton class, for Kernel.require) whose body is that C function.
    #
    # install! replaces each of those entries, under the same name and visibility, with
    # loadout's hook: a C function too (require_native.c) that answers the $LOAD_PATH search from
    # the index and otherwise does exactly what rb_require_string does. So:
    # - every decorator, installed before or after loadout, still runs, in the same order, with
    #   the argument it would get without loadout (Zeitwerk sees the directory path an autoload of
    #   an implicit namespace passes, RubyGems sees the feature name and still activates gems on a
    #   LoadError);
    # - a decorator installed later (an alias of Kernel#require taken after setup) wraps the hook
    #   like it would wrap Ruby's require; Bundler's reverse of RubyGems' mixin
    #   (define_method(:require, instance_method(:gem_original_require))) copies the hook;
    # - nothing is prepended, so `alias_method` after a prepend (which captures the prepended
    #   method: the cause of the super/recursion errors this design replaces) cannot happen;
    # - an UnboundMethod of Ruby's require captured before install keeps calling Ruby's require:
    #   that path is not accelerated, and not changed either.
    # The hook stays in place for the process; with the index uninstalled it is rb_require_string.
    module RequireHook
      class << self
        # Replaces every entry of Ruby's C require not replaced yet. Returns how many it replaced.
        #: () -> Integer
        def install!
          found = targets
          verbose = $VERBOSE
          $VERBOSE = nil # redefining an aliased C method warns under -w; nothing here is a mistake
          found.each do |mod, name, public|
            hook(mod, name, public)
            register(:lower, mod, name)
          end
          found.size
        ensure
          $VERBOSE = verbose
        end

        # Remembers the entry +name+ of +mod+ as loadout's hook of +kind+ (:lower, or a front's:
        # :rubygems, :bundled), just put there: hooked? and targets compare entries with it.
        def register(kind, mod, name)
          (@hooks ||= {})[[kind, mod]] ||= own_method(mod, name)
        end

        # Whether +mod+'s +name+ is loadout's hook of +kind+ (an entry with the same definition as
        # the one register recorded: the native hooks are C methods, told apart by their function).
        # The twin's hooks are Ruby methods defined by loadout's files.
        def hooked?(mod, name, kind = :lower)
          ref = @hooks&.[]([kind, mod]) or return false
          um = own_method(mod, name) or return false
          return um == ref if BACKEND == :native

          um.source_location&.first&.start_with?(File.dirname(__FILE__)) ? true : false
        end

        # [module, name, public?] for each method entry of Kernel and Kernel's singleton class that
        # is Ruby's C require itself or an alias of it, whatever its name.
        def targets
          found = []
          [::Kernel, ::Kernel.singleton_class].each do |mod|
            # (The native hook is a C function named like the entry it replaced, so it matches
            # again here: replacing it by itself changes nothing. Every boot looks at each of
            # Kernel's ~180 methods: only those that take one argument cost an UnboundMethod.)
            direct = direct?(mod)
            mod.private_instance_methods(false).each do |name|
              found << [mod, name, false] if one_argument?(mod, name, direct) && ruby_require?(mod, name)
            end
            mod.public_instance_methods(false).each do |name|
              found << [mod, name, true] if one_argument?(mod, name, direct) && ruby_require?(mod, name)
            end
          end
          found
        end

        # Whether Native.method_arity answers for +mod+'s own entries: natively, with nothing
        # prepended to +mod+ (whose method would be found first).
        def direct?(mod)
          BACKEND == :native && mod.ancestors.first.equal?(mod)
        end

        # False when +mod+'s own +name+ surely does not take exactly one argument (Ruby's require
        # and RubyGems' do): asked without an UnboundMethod when +direct+ (see #direct?).
        def one_argument?(mod, name, direct)
          !direct || Native.method_arity(mod, name) == 1
        end

        # The entry in +mod+'s own method table, behind any module prepended to +mod+ (which
        # instance_method would answer first).
        def own_method(mod, name)
          um = mod.instance_method(name)
          um = um.super_method while um && um.owner != mod
          um
        rescue NameError # no such method
          nil
        end

        private

        # Ruby's C require: a C method (no source) first defined as require, taking one argument,
        # and not one of loadout's fronts (C methods defined as require too; the lower hook itself
        # matches, and replacing it by itself changes nothing).
        def ruby_require?(mod, name)
          um = own_method(mod, name)
          return false unless um && um.source_location.nil? && um.original_name == :require && um.arity == 1

          (@hooks || {}).none? { |(kind, m), ref| kind != :lower && m.equal?(mod) && ref == um }
        rescue NameError
          false
        end

        def hook(mod, name, public)
          if BACKEND == :native
            Native.lp_hook(mod, name, public)
          else
            original = own_method(mod, name)
            hook = RubyHook
            hook.ruby_require ||= original
            mod.send(:define_method, name) { |feature| hook.require(self, feature, original) }
            mod.send(:private, name) unless public
          end
        end
      end
    end
  end
end

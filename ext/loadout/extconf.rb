# frozen_string_literal: true

require "mkmf"

# The extension is optional: every native function has a pure-Ruby twin. So nothing here may
# fail `gem install` / `bundle install`: off CRuby, without a needed function, or when the
# compile itself fails, the gem installs without it and the twins are used.
FALLBACK = "the pure-Ruby backend will be used (same results, slower)"

# A Makefile that builds nothing, so `gem install` still succeeds.
def write_noop_makefile(reason)
  warn "loadout: not building the native extension (#{reason}); #{FALLBACK}"
  File.write("Makefile", "all install clean distclean:\n\t@true\n.PHONY: all install clean distclean\n")
  exit 0
end

# Puts mkmf's Makefile behind one whose targets cannot fail: a failed compile prints one line
# and leaves the extension out (install then installs nothing). Variables given on the make
# command line (RubyGems passes sitearchdir/sitelibdir) reach the inner make through MAKEFLAGS.
def guard_makefile
  File.rename("Makefile", "Makefile.ext")
  File.write("Makefile", <<~MAKE)
    all:
    \t@rm -f ext-failed
    \t@$(MAKE) -f Makefile.ext all || { touch ext-failed; echo "loadout: the native extension failed to compile; #{FALLBACK}" >&2; }
    install: all
    \t@if [ -f ext-failed ]; then true; else $(MAKE) -f Makefile.ext install; fi
    clean distclean:
    \t@rm -f ext-failed
    \t@-$(MAKE) -f Makefile.ext $@
    .PHONY: all install clean distclean
  MAKE
end

write_noop_makefile("#{RUBY_ENGINE} is not CRuby") unless RUBY_ENGINE == "ruby"

%w[openat fdopendir fstatat dirfd].each do |fn|
  write_noop_makefile("#{fn}() is missing") unless have_func(fn, %w[fcntl.h dirent.h sys/stat.h])
end
have_func("fdatasync", "unistd.h") # fsync otherwise
have_func("posix_fadvise", "fcntl.h")
have_func("preadv", "sys/uio.h") # a store read puts the value straight into its String
# Nanosecond file times (stat_time.h): st_mtim on Linux and the BSDs, st_mtimespec on macOS.
have_struct_member("struct stat", "st_mtim", "sys/stat.h") ||
  have_struct_member("struct stat", "st_mtimespec", "sys/stat.h")

$CFLAGS << " -std=c99 -O2 -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter"
$CFLAGS << " -Werror" if ENV["LOADOUT_PEDANTIC"] == "1"
$CFLAGS << " -O0 -g3" if ENV["LOADOUT_DEBUG"] == "1"
$defs << "-D_GNU_SOURCE"

begin
  create_makefile("loadout/loadout_ext")
rescue StandardError => e
  write_noop_makefile(e.message)
end
# LOADOUT_PEDANTIC (bin/test's compiler checks) wants a failed compile to fail.
guard_makefile unless ENV["LOADOUT_PEDANTIC"] == "1"

# frozen_string_literal: true

require "mkmf"

# Off CRuby (JRuby, TruffleRuby) the gem runs on its Ruby twins: write a Makefile that builds
# nothing so `gem install` still succeeds.
def write_noop_makefile(reason)
  warn "loadout: not building the native extension (#{reason}); the pure-Ruby backend will be used"
  File.write("Makefile", "all install clean distclean:\n\t@true\n.PHONY: all install clean distclean\n")
  exit 0
end

write_noop_makefile("#{RUBY_ENGINE} is not CRuby") unless RUBY_ENGINE == "ruby"

%w[openat fdopendir fstatat dirfd].each do |fn|
  write_noop_makefile("#{fn}() is missing") unless have_func(fn, %w[fcntl.h dirent.h sys/stat.h])
end
have_func("fdatasync", "unistd.h") # fsync otherwise
have_func("posix_fadvise", "fcntl.h")
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

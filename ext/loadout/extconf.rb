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
have_func("fdatasync", "unistd.h")
have_func("posix_fadvise", "fcntl.h")
# QuietSpawn falls back to Process.spawn without posix_spawn and its chdir file action.
have_func("posix_spawn", "spawn.h")
have_func("posix_spawn_file_actions_addchdir_np", "spawn.h")
have_func("posix_spawn_file_actions_addclosefrom_np", "spawn.h")

$CFLAGS << " -std=c99 -O2 -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter"
$CFLAGS << " -Werror" if ENV["LOADOUT_PEDANTIC"] == "1"
$CFLAGS << " -O0 -g3" if ENV["LOADOUT_DEBUG"] == "1"
$defs << "-D_GNU_SOURCE"

begin
  create_makefile("loadout/loadout_ext")
rescue StandardError => e
  write_noop_makefile(e.message)
end

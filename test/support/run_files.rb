# frozen_string_literal: true

# Loads the test files named before "--"; what follows "--" goes to minitest (bin/test, bin/roots),
# and so does TESTOPTS (Rake's name for it): TESTOPTS=-v bin/test prints each test's time, for a
# whole lane too.
sep = ARGV.index("--") || ARGV.size
files = ARGV[0...sep]
ARGV.replace((ARGV[(sep + 1)..] || []) + ENV.fetch("TESTOPTS", "").split)
files.each { |f| require File.expand_path(f) }

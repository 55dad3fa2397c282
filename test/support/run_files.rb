# frozen_string_literal: true

# Loads the test files named before "--"; what follows "--" goes to minitest (bin/test, bin/roots).
sep = ARGV.index("--") || ARGV.size
files = ARGV[0...sep]
ARGV.replace(ARGV[(sep + 1)..] || [])
files.each { |f| require File.expand_path(f) }

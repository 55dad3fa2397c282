# frozen_string_literal: true

# `bin/rails runner` script (development): edits Post#probe_version ("v1" -> "v2", same size) and
# reloads; adds app/services/payments/refund.rb (a new file in the implicit namespace) and
# reloads. KEEP_STAT=1 keeps the edited file's size and mtime (touch -r): Rails' file watcher
# compares mtimes and would not see that edit, so the reloader is told to reload anyway (a cache
# that trusts size and mtime would hand back the old code). next_boot.rb then checks both edits
# in a new process; the test puts the files back.
root = Rails.root.to_s
post = "#{root}/app/models/post.rb"
puts "before=#{Post.new.probe_version} posts=#{Post.count}"

source = File.read(post)
edited = source.sub('"v1"', '"v2"')
raise "post.rb has no \"v1\" to edit" if edited == source

stamp = "#{root}/tmp/post.rb.stamp"
system("touch", "-r", post, stamp, exception: true)
File.write(post, edited)
if ENV["KEEP_STAT"] == "1"
  system("touch", "-r", stamp, post, exception: true)
  Rails.application.reloader.check = -> { true }
end
Rails.application.reloader.reload!
puts "after=#{Post.new.probe_version}"

File.write("#{root}/app/services/payments/refund.rb", <<~RUBY)
  module Payments
    class Refund
      def self.call = "refunded"
    end
  end
RUBY
Rails.application.reloader.reload!
puts "added=#{Payments::Refund.call} charge=#{Payments::Charge.new(100).call}"
puts "load_hooks=#{LOAD_PROBES.sort.inspect}"

load File.expand_path("report.rb", __dir__)

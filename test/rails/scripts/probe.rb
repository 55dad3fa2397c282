# frozen_string_literal: true

# `bin/rails runner` script (development, and production with eager loading): loads every
# Zeitwerk loader's code, prints what the app computes (models, the implicit and explicit
# namespaces, the lib/extras autoload path, YAML locales, load-hook counts), then writes the
# features and constants report (report.rb).
Zeitwerk::Loader.eager_load_all

config = Rails.configuration
puts "env=#{Rails.env} eager_load=#{config.eager_load} reloading=#{config.reloading_enabled?}"
post = Post.published.first
puts "posts=#{Post.count} published=#{Post.published.count} first=#{post.title} (#{post.publish_label}) " \
     "comments=#{post.comments.count}"
puts "charge=#{Payments::Charge.new(1250).call} formatter=#{PriceFormatter.call(99)}"
puts "invoice=#{Billing::Invoice.first.label} table=#{Billing::Invoice.table_name}"
puts "i18n=#{I18n.t("probe.greeting")} / #{I18n.t("probe.greeting", locale: :fr)} / #{Post.model_name.human} / " \
     "#{Post.human_attribute_name(:title)} / #{Billing::Invoice.model_name.human(count: 2)}"
records = ApplicationRecord.descendants.map(&:name).sort
puts "routes=#{Rails.application.routes.routes.size} records=#{records.join(",")}"
puts "load_hooks=#{LOAD_PROBES.sort.inspect}"

load File.expand_path("report.rb", __dir__)

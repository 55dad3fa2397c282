# frozen_string_literal: true

require "test_helper"
require_relative "support/rails_app"

# Reloading in development (scripts/reload.rb, then scripts/next_boot.rb in a new process): an
# edited model method and a file added under app/ are what runs, in the same process after
# `Rails.application.reloader.reload!` and in the next boot, and the load hooks fire as often,
# with loadout cold and warm as without it.
class RailsReloadTest < Minitest::Test
  include Loadout::TestSupport::RailsApp

  POST = "app/models/post.rb"
  REFUND = "app/services/payments/refund.rb"

  test "an edited model and an added file are reloaded and seen by the next boot" do
    assert_reloads({})
  end

  test "an edit that keeps the file's size and mtime (touch -r) is reloaded and seen by the next boot" do
    assert_reloads({ "KEEP_STAT" => "1" })
  end

  private

  def assert_reloads(env)
    with_rails_app do |app|
      runs = assert_same_behaviour do |mode|
        restore(app)
        [run_rails(app, mode, "bin/rails", "runner", script("reload.rb"), env: env),
         run_rails(app, mode, "bin/rails", "runner", script("next_boot.rb"))]
      end
      reload, next_boot = runs[:plain]
      assert_match(/^before=v1 posts=2\nafter=v2\nadded=refunded charge=charged 1.00\n/, reload.stdout)
      # Post was loaded, then loaded again after the edit's reload (the second reload unloads it,
      # nothing uses it after that).
      assert_includes reload.stdout, '["zeitwerk:Post", 2]'
      assert_includes next_boot.stdout, "next_boot=v2 added=refunded"
      assert_includes next_boot.constants, "Payments::Refund"
    end
  end

  # Every mode starts from the generated app's post.rb (content and mtime) and no refund.rb.
  def restore(app)
    FileUtils.cp(File.join(RailsAppGenerator.path, POST), File.join(app, POST), preserve: true)
    FileUtils.rm_f(File.join(app, REFUND))
  end
end

class Post < ApplicationRecord
  include Publishable

  has_many :comments, dependent: :destroy

  # test/rails/scripts/reload.rb rewrites "v1" to "v2" (same size) and checks the new code runs.
  def probe_version
    "v1"
  end
end

class Post < ApplicationRecord
  include Publishable

  has_many :comments, dependent: :destroy

  # test/rails/scripts/reload.rb edits v1 into v2 below (same size) and checks the new code runs.
  def probe_version
    "v1"
  end
end

# A concern (app/models/concerns is an autoload root of its own), included by Post.
module Publishable
  extend ActiveSupport::Concern

  included do
    scope :published, -> { where(published: true) }
  end

  def publish_label
    published? ? I18n.t("probe.published") : I18n.t("probe.draft")
  end
end

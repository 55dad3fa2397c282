# Payments is an implicit namespace: there is no payments.rb, Zeitwerk defines the module for the
# directory.
module Payments
  class Charge
    def initialize(amount_cents)
      @amount_cents = amount_cents
    end

    def call
      I18n.t("probe.charged", amount: PriceFormatter.call(@amount_cents))
    end
  end
end

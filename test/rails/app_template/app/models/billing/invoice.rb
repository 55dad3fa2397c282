# Billing is an explicit namespace: app/models/billing.rb (table_name_prefix) defines it.
class Billing::Invoice < ApplicationRecord
  def label
    "#{number} #{Payments::Charge.new((amount * 100).to_i).call}"
  end
end

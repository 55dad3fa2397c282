# Autoloaded from lib/extras, a custom config.autoload_paths entry (config/application.rb).
class PriceFormatter
  def self.call(cents)
    format("%.2f", cents / 100.0)
  end
end

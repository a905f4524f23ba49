# frozen_string_literal: true

# Receive payhooks webhooks correctly: verify the signature over the raw bytes, deduplicate on the
# evt_ id, acknowledge at once, credit once per payment id.
require_relative 'payhooks/version'
require_relative 'payhooks/errors'
require_relative 'payhooks/event_types'
require_relative 'payhooks/webhook'
require_relative 'payhooks/stores/store'
require_relative 'payhooks/stores/memory'
require_relative 'payhooks/handler'
require_relative 'payhooks/rack'

module Payhooks
  module Stores
    autoload :Postgres, File.expand_path('payhooks/stores/postgres', __dir__)
    autoload :Redis, File.expand_path('payhooks/stores/redis', __dir__)
  end

  # True for payment.* events, whose data.object is the Payment.
  def self.payment_event?(event)
    event.is_a?(Hash) && event['type'].to_s.start_with?('payment.') && event.dig('data', 'object', 'object') == 'payment'
  end
end

# frozen_string_literal: true

require_relative '../errors'

module Payhooks
  # Seen event ids are kept at least 30 days, in seconds.
  DEDUP_RETENTION = 30 * 24 * 3600

  # The right to process one event, handed by a store's claim to exactly one caller. +token+
  # fences a holder whose lease expired: its later writes are ignored.
  Claim = Struct.new(:event_id, :token, :attempt)

  # The outcome of credit_once: +credited+ is true for the one call that ran the block, whose
  # result is +value+.
  CreditResult = Struct.new(:credited, :value) do
    alias_method :credited?, :credited
  end

  module Stores
    # What every store does (durations in seconds):
    #
    # - claim(event, lease): the insert-or-ignore. Records the id and returns a Claim, or nil when
    #   the id was seen (done, being processed under a live lease, or waiting for a retry).
    #   Concurrent identical calls get at most one claim.
    # - complete(claim): keeps the id as done for the retention period.
    # - retry_later(claim, delay, lease, error): keeps the id as seen while the work waits.
    # - release(claim): forgets the id, so the next delivery of the event is processed.
    # - durable?: a durable store also keeps the event with its id and hands due work back
    #   through claim_due(limit, lease) (retries, and work whose holder died), and keeps work that
    #   failed for good through mark_failed(claim, error).
    # - credit_once(payment_id) { ... }: runs the block at most once per payment id.
    module Store; end
  end

  # @api private
  module Internal
    module_function

    def check_retention(retention)
      unless retention.is_a?(Numeric) && retention >= DEDUP_RETENTION
        raise ConfigurationError, "payhooks: seen ids must be kept at least 30 days (#{DEDUP_RETENTION} s)"
      end

      retention
    end

    def check_payment_id(payment_id)
      return if payment_id.is_a?(String) && !payment_id.empty?

      raise ConfigurationError, 'payhooks: credit_once needs the payment id (payment["id"], pay_...)'
    end

    def error_text(error)
      return error.to_s[0, 4000] unless error.is_a?(Exception)

      ["#{error.class}: #{error.message}", *(error.backtrace || []).first(20)].join("\n")[0, 4000]
    end
  end
  private_constant :Internal
end

# frozen_string_literal: true

module Payhooks
  # The base class of every error this library raises: rescue Payhooks::Error to catch them all.
  class Error < StandardError; end

  # A programming error in how the library is called or configured (no secret, a secret without
  # whsec_, a body that is not a String, a misspelt event type): fix the code, don't retry.
  class ConfigurationError < Error; end

  # A delivery that must be answered with HTTP 400 and not processed. +reason+ says why:
  #
  # - +missing_header+: Service-Signature or Service-Event-Id is absent or empty;
  # - +malformed_header+: Service-Signature is not t=<unix seconds>,v1=<64 lowercase hex>[,v1=...];
  # - +bad_signature+: no v1 matches the HMAC of "<t>.<raw body>" under any configured secret;
  # - +timestamp_out_of_tolerance+: the signature matched but |now - t| is more than the tolerance;
  # - +event_id_mismatch+: Service-Event-Id (not signed) differs from the signed body's id;
  # - +invalid_json+: the signed body is not UTF-8 JSON of an object with a string id and type.
  class VerificationError < Error
    REASONS = %w[
      missing_header malformed_header bad_signature timestamp_out_of_tolerance event_id_mismatch invalid_json
    ].freeze

    attr_reader :reason

    def initialize(reason, message)
      raise ConfigurationError, "unknown reason #{reason}" unless REASONS.include?(reason)

      super(message)
      @reason = reason
    end

    # The HTTP status to answer with.
    def status
      400
    end
  end

  # credit_once found another caller crediting the same payment, and it did not finish in time.
  # Nothing was credited by this call: retry later (the handler's queue does).
  class CreditInProgressError < Error
    attr_reader :payment_id

    def initialize(payment_id)
      super("payment #{payment_id} is being credited by another caller; try again later")
      @payment_id = payment_id
    end
  end
end

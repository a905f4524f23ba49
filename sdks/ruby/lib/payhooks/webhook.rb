# frozen_string_literal: true

require 'json'
require 'openssl'
require_relative 'errors'

module Payhooks
  SIGNATURE_HEADER = 'Service-Signature'
  EVENT_ID_HEADER = 'Service-Event-Id'
  SECRET_PREFIX = 'whsec_'
  # |now - t| allowed, in seconds, in either direction.
  DEFAULT_TOLERANCE = 300

  # Verifying a delivery: the Service-Signature header is t=<unix seconds>,v1=<hex>[,v1=<hex>...],
  # where v1 is HMAC-SHA256, keyed with the endpoint's whole whsec_ secret, of "<t>.<raw body>".
  module Webhook
    module_function

    # Verifies a delivery and returns the event (a Hash with string keys). Raises
    # Payhooks::VerificationError (answer 400, don't process) or Payhooks::ConfigurationError for a programming
    # error (no secret, a secret without whsec_, a body that is not a String).
    #
    # +body+: the raw request body exactly as received (request.body.read), never parsed JSON.
    # +headers+: a Hash of header names (any case) or a Rack env (HTTP_SERVICE_SIGNATURE).
    # +secret+: the endpoint's whsec_ secret, or an Array of them during a rotation.
    # +tolerance+: seconds (default 300). +now+: a Time, for tests.
    def verify(body:, headers:, secret:, tolerance: DEFAULT_TOLERANCE, now: nil)
      secrets = Internal.secrets_of(secret)
      tolerance = Internal.tolerance_of(tolerance)
      bytes = Internal.body_bytes(body)
      signature = Internal.read_header(headers, SIGNATURE_HEADER)
      event_id = Internal.read_header(headers, EVENT_ID_HEADER)
      timestamp, received = Internal.parse_header(signature)

      # Compare every v1 with every secret's HMAC, without stopping at the first match, so the
      # time taken does not say which one matched.
      matched = false
      signed = "#{timestamp}.".b + bytes
      secrets.each do |s|
        expected = OpenSSL::HMAC.hexdigest('SHA256', s, signed)
        received.each { |r| matched = true if OpenSSL.fixed_length_secure_compare(expected, r) }
      end
      raise VerificationError.new('bad_signature', 'no v1 signature matches the raw body under the configured secret(s)') unless matched

      Internal.check_timestamp(timestamp, now || Time.now, tolerance)
      Internal.parse_event(bytes, event_id)
    end

    # The Service-Signature header for +body+ signed with +secret+ (or several secrets) at
    # +timestamp+ (Unix seconds): for tests of your receiver.
    def sign(body:, secret:, timestamp: Time.now.to_i)
      secrets = Internal.secrets_of(secret)
      bytes = Internal.body_bytes(body)
      parts = ["t=#{Integer(timestamp)}"]
      secrets.each { |s| parts << "v1=#{OpenSSL::HMAC.hexdigest('SHA256', s, "#{Integer(timestamp)}.".b + bytes)}" }
      parts.join(',')
    end

    # Headers of a test delivery of +event+ (a Hash): [body, headers].
    def sign_test_delivery(event:, secret:, timestamp: Time.now.to_i)
      body = JSON.generate(event)
      [body, {
        'Content-Type' => 'application/json',
        EVENT_ID_HEADER => event.fetch('id') { event.fetch(:id) },
        SIGNATURE_HEADER => sign(body: body, secret: secret, timestamp: timestamp)
      }]
    end
  end

  # The helpers of Webhook and the stores: not part of the API (the constant is private, so
  # Payhooks::Internal is a NameError outside the library).
  # @api private
  module Internal
    module_function

    def secrets_of(secret)
      list = secret.is_a?(Array) ? secret : [secret]
      raise ConfigurationError, "payhooks: secret is required: the endpoint's whsec_ signing secret" if list.empty?

      list.map do |s|
        unless s.is_a?(String) && s.start_with?(SECRET_PREFIX) && s.length > SECRET_PREFIX.length
          raise ConfigurationError,
                "payhooks: secret must be the endpoint's signing secret, which starts with \"whsec_\"; " \
                'it is used whole, prefix included, as the HMAC key'
        end
        s.b
      end
    end

    def tolerance_of(tolerance)
      unless tolerance.is_a?(Numeric) && tolerance.finite? && tolerance >= 0
        raise ConfigurationError, 'payhooks: tolerance must be a non-negative number of seconds'
      end

      tolerance
    end

    def body_bytes(body)
      return body.b if body.is_a?(String)

      raise ConfigurationError,
            'payhooks: pass the raw request body as a String exactly as received (request.body.read); ' \
            "the signature covers the raw bytes, which a parsed #{body.class} no longer has"
    end

    # One header's value; nil when absent or empty. Several values (a repeated header) are malformed.
    def read_header(headers, name)
      raise ConfigurationError, 'payhooks: headers is required (the request headers)' unless headers.respond_to?(:each_pair)

      rack_key = "HTTP_#{name.upcase.tr('-', '_')}"
      value = headers[rack_key] if headers.key?(rack_key)
      if value.nil?
        lower = name.downcase
        headers.each_pair do |k, v|
          if k.to_s.downcase == lower
            value = v
            break
          end
        end
      end
      if value.is_a?(Array)
        raise VerificationError.new('malformed_header', "#{name} header sent more than once") if value.length > 1

        value = value.first
      end
      raise VerificationError.new('missing_header', "missing #{name} header") if value.nil? || value.to_s.empty?

      value.to_s
    end

    # Strict parse of t=<int>,v1=<hex>[,v1=<hex>...]; unknown schemes (v2=...) are skipped.
    def parse_header(header)
      timestamp = nil
      signatures = []
      header.split(',', -1).each do |part|
        key, eq, value = part.partition('=')
        return malformed! if eq.empty? || key.empty?

        case key
        when 't'
          return malformed! if timestamp || !value.match?(/\A\d{1,15}\z/)

          timestamp = Integer(value, 10)
        when 'v1'
          return malformed! unless value.match?(/\A[0-9a-f]{64}\z/)

          signatures << value
        else
          return malformed! unless key.match?(/\A[a-z][a-z0-9]*\z/)
        end
      end
      return malformed! if timestamp.nil? || signatures.empty?

      [timestamp, signatures]
    end

    def malformed!
      raise VerificationError.new('malformed_header',
                                  "#{SIGNATURE_HEADER} must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...] without spaces")
    end

    # Compared in milliseconds: 300.001 s is outside a 300 s tolerance.
    def check_timestamp(timestamp, now, tolerance)
      now_ms = (now.to_r * 1000)
      offset_ms = now_ms - (timestamp * 1000)
      return if offset_ms.abs <= tolerance.to_r * 1000

      raise VerificationError.new('timestamp_out_of_tolerance',
                                  format('signature timestamp %<t>d is %<off>.3f s from now; the tolerance is %<tol>s s',
                                         t: timestamp, off: offset_ms.to_f / 1000, tol: tolerance))
    end

    # After the signature matched: parse the (now trusted) bytes and bind the unsigned
    # Service-Event-Id header to the signed body's id.
    def parse_event(bytes, event_id)
      text = bytes.dup.force_encoding(Encoding::UTF_8)
      raise VerificationError.new('invalid_json', 'the signed body is not UTF-8 JSON') unless text.valid_encoding?

      event = begin
        JSON.parse(text)
      rescue JSON::ParserError
        raise VerificationError.new('invalid_json', 'the signed body is not UTF-8 JSON')
      end
      unless event.is_a?(Hash) && event['id'].is_a?(String) && event['type'].is_a?(String)
        raise VerificationError.new('invalid_json', 'the signed body is not an event object with a string id and type')
      end
      unless event['id'] == event_id
        raise VerificationError.new('event_id_mismatch', "#{EVENT_ID_HEADER} does not match the id of the signed body")
      end

      event
    end
  end
  private_constant :Internal
end

# frozen_string_literal: true

require 'json'
require 'openssl'
require_relative 'errors'
# SECRET_PREFIX, PUBLIC_KEY_PREFIX and Formats (what verification accepts) come from the contract.
require_relative 'generated'

module Payhooks
  SIGNATURE_HEADER = 'Service-Signature'
  EVENT_ID_HEADER = 'Service-Event-Id'
  # |now - t| allowed, in seconds, in either direction.
  DEFAULT_TOLERANCE = 300

  # Verifying a delivery: the Service-Signature header is t=<unix seconds>,v1=<hex>[,v1=<hex>...],
  # where v1 is HMAC-SHA256, keyed with the endpoint's whole whsec_ secret, of "<t>.<raw body>".
  # With asymmetric signing on, v1a=<base64> entries carry ed25519 signatures of the same bytes,
  # verified with the endpoint's whpk_ public key by Ruby's OpenSSL (1.1.1 or later).
  module Webhook
    module_function

    # Verifies a delivery and returns the event (a Hash with string keys). Raises
    # Payhooks::VerificationError (answer 400, don't process) or Payhooks::ConfigurationError for a programming
    # error (no secret nor public key, a secret without whsec_, a public key that is not whpk_,
    # a body that is not a String).
    #
    # +body+: the raw request body exactly as received (request.body.read), never parsed JSON.
    # +headers+: a Hash of header names (any case) or a Rack env (HTTP_SERVICE_SIGNATURE).
    # +secret+: the endpoint's whsec_ secret, or an Array of them during a rotation.
    # +public_keys+: the endpoint's whpk_ ed25519 public key(s), instead of or beside +secret+:
    # one valid signature of either kind is enough.
    # +tolerance+: seconds (default 300). +now+: a Time, for tests.
    def verify(body:, headers:, secret: nil, tolerance: DEFAULT_TOLERANCE, now: nil, public_keys: nil)
      keys = Internal.public_keys_of(public_keys)
      secrets = Internal.secrets_of(secret, have_public_keys: !keys.empty?)
      tolerance = Internal.tolerance_of(tolerance)
      bytes = Internal.body_bytes(body)
      signature = Internal.read_header(headers, SIGNATURE_HEADER)
      event_id = Internal.read_header(headers, EVENT_ID_HEADER)
      timestamp, received, asymmetric = Internal.parse_header(signature)

      # Compare every v1 with every secret's HMAC, without stopping at the first match, so the
      # time taken does not say which one matched.
      matched = false
      signed = "#{timestamp}.".b + bytes
      secrets.each do |s|
        expected = OpenSSL::HMAC.hexdigest('SHA256', s, signed)
        received.each { |r| matched = true if OpenSSL.fixed_length_secure_compare(expected, r) }
      end
      # ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
      keys.each do |key|
        asymmetric.each { |sig| matched = true if Internal.ed25519_verifies?(key, sig, signed) }
      end
      unless matched
        raise VerificationError.new('bad_signature',
                                    'no signature in the header verifies the raw body under the configured secret(s) or public key(s)')
      end

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

    def secrets_of(secret, have_public_keys: false)
      list = secret.is_a?(Array) ? secret : [secret].compact
      return [] if list.empty? && have_public_keys
      if list.empty?
        raise ConfigurationError,
              "payhooks: secret is required: the endpoint's whsec_ signing secret (or public_keys, its whpk_ public keys)"
      end

      list.map do |s|
        unless s.is_a?(String) && s.start_with?(SECRET_PREFIX) && s.length > SECRET_PREFIX.length
          raise ConfigurationError,
                "payhooks: secret must be the endpoint's signing secret, which starts with \"whsec_\"; " \
                'it is used whole, prefix included, as the HMAC key'
        end
        s.b
      end
    end

    # The DER SubjectPublicKeyInfo prefix of an ed25519 key (RFC 8410): the 32 raw bytes follow.
    ED25519_SPKI_PREFIX = ['302a300506032b6570032100'].pack('H*').freeze

    def public_keys_of(public_keys)
      list = public_keys.is_a?(Array) ? public_keys : [public_keys].compact
      list.map do |k|
        body = k.is_a?(String) && k.start_with?(PUBLIC_KEY_PREFIX) ? k[PUBLIC_KEY_PREFIX.length..] : ''
        # Canonical base64 of 32 bytes: the last data character carries zero padding bits.
        unless body.match?(Formats::PUBLIC_KEY)
          raise ConfigurationError,
                "payhooks: each of public_keys must be one of the endpoint's public keys: " \
                '"whpk_" followed by the base64 of its 32 bytes'
        end
        OpenSSL::PKey.read(ED25519_SPKI_PREFIX + body.unpack1('m0'))
      end
    end

    def ed25519_verifies?(key, signature, signed)
      key.verify(nil, signature, signed)
    rescue OpenSSL::PKey::PKeyError
      false
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

    # Strict parse of t=<int>,v1=<hex>[,v1=<hex>...][,v1a=<base64>...]; unknown schemes (v2=...)
    # are skipped. The v1a signatures are returned as raw 64-byte strings.
    def parse_header(header)
      timestamp = nil
      signatures = []
      asymmetric = []
      header.split(',', -1).each do |part|
        key, eq, value = part.partition('=')
        return malformed! if eq.empty? || key.empty?

        case key
        when 't'
          return malformed! if timestamp || !value.match?(Formats::TIMESTAMP)

          timestamp = Integer(value, 10)
        when 'v1'
          return malformed! unless value.match?(Formats::V1)

          signatures << value
        when 'v1a'
          # Canonical base64 of 64 bytes: the last data character carries zero padding bits.
          return malformed! unless value.match?(Formats::V1A)

          asymmetric << value.unpack1('m0')
        else
          return malformed! unless key.match?(Formats::SCHEME)
        end
      end
      return malformed! if timestamp.nil? || (signatures.empty? && asymmetric.empty?)

      [timestamp, signatures, asymmetric]
    end

    def malformed!
      raise VerificationError.new('malformed_header',
                                  "#{SIGNATURE_HEADER} must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...]" \
                                  '[,v1a=<base64 of 64 bytes>...] without spaces')
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

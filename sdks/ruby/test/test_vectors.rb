# frozen_string_literal: true

require_relative 'test_helper'

# Spec 5.1: every library runs the shared signature vectors made by the contract package.
class TestVectors < Minitest::Test
  TestSupport.vectors.fetch('vectors').each do |v|
    define_method("test_vector_#{v['name']}") do
      body = v['body_base64'].unpack1('m0')
      outcome =
        begin
          event = Payhooks::Webhook.verify(body: body, headers: v['headers'], secret: v['secrets'],
                                           tolerance: v['tolerance_seconds'], now: Time.at(Rational(v['now_ms'], 1000)),
                                           public_keys: v['public_keys'])
          { 'ok' => true, 'event_id' => event['id'], 'event_type' => event['type'] }
        rescue Payhooks::VerificationError => e
          assert_equal 400, e.status
          { 'ok' => false, 'reason' => e.reason }
        rescue Payhooks::ConfigurationError => e
          # A key that is not a whpk_ key is refused without being echoed.
          refute_includes e.message, v['public_keys'][0][5..]
          { 'ok' => false, 'reason' => 'configuration_error' }
        end
      assert_equal v['expected'], outcome, v['description']
    end
  end

  def test_a_handler_with_only_a_public_key_answers_by_the_vectors
    { 'v1a_valid_public_key_only' => 200, 'v1a_wrong_key' => 400, 'v1a_tampered_body' => 400 }.each do |name, status|
      v = TestSupport.vectors['vectors'].find { |x| x['name'] == name }
      handler = Payhooks::WebhookHandler.new(public_keys: v['public_keys'], store: Payhooks::Stores::Memory.new,
                                             on_rejected: ->(_) {}, clock: -> { Time.at(Rational(v['now_ms'], 1000)) }) { |*| nil }
      begin
        assert_equal status, handler.handle(body: v['body_base64'].unpack1('m0'), headers: v['headers']).status, name
      ensure
        handler.close
      end
    end
  end

  def test_the_library_knows_the_contracts_event_types
    assert_equal TestSupport.vectors.fetch('event_types'), Payhooks::EVENT_TYPES
  end

  def test_headers_as_a_rack_env
    v = TestSupport.vectors['vectors'].find { |x| x['name'] == 'valid' }
    env = v['headers'].to_h { |k, val| ["HTTP_#{k.upcase.tr('-', '_')}", val] }
    event = Payhooks::Webhook.verify(body: v['body_base64'].unpack1('m0'), headers: env, secret: v['secrets'],
                                     now: Time.at(Rational(v['now_ms'], 1000)))
    assert_equal v['expected']['event_id'], event['id']
  end

  def test_a_repeated_header_is_malformed
    v = TestSupport.vectors['vectors'].find { |x| x['name'] == 'valid' }
    headers = v['headers'].merge('Service-Signature' => [v['headers']['Service-Signature']] * 2)
    error = assert_raises(Payhooks::VerificationError) do
      Payhooks::Webhook.verify(body: v['body_base64'].unpack1('m0'), headers: headers, secret: v['secrets'],
                               now: Time.at(Rational(v['now_ms'], 1000)))
    end
    assert_equal 'malformed_header', error.reason
  end

  def test_programming_errors_are_argument_errors
    assert_raises(Payhooks::ConfigurationError) { Payhooks::Webhook.verify(body: '{}', headers: {}, secret: 'not-a-secret') }
    assert_raises(Payhooks::ConfigurationError) { Payhooks::Webhook.verify(body: '{}', headers: {}, secret: []) }
    error = assert_raises(Payhooks::ConfigurationError) { Payhooks::Webhook.verify(body: { 'id' => 'x' }, headers: {}, secret: TestSupport::SECRET) }
    assert_match(/raw request body/, error.message)
    assert_raises(Payhooks::ConfigurationError) { Payhooks::Webhook.verify(body: '{}', headers: {}, secret: TestSupport::SECRET, tolerance: -1) }
  end

  def test_sign_round_trips_with_the_current_clock
    event = TestSupport.payment_event
    body, headers = TestSupport.delivery(event)
    assert_equal event['id'], Payhooks::Webhook.verify(body: body, headers: headers, secret: TestSupport::SECRET)['id']
  end
end

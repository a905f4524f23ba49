# frozen_string_literal: true

require_relative 'test_helper'
require 'rack'
require 'rack/mock'
require 'sinatra/base'

# The Rack adapter reads the raw bytes (spec 5.1.4) whatever the framework did with the body.
class TestRack < Minitest::Test
  include TestSupport

  def setup
    @seen = Queue.new
    @handler = Payhooks::WebhookHandler.new(secret: SECRET, store: Payhooks::Stores::Memory.new, on_rejected: ->(*) {}) do |event, _|
      @seen << event['id']
    end
  end

  def teardown
    @handler.close
  end

  def post(app, body, headers, path: '/webhooks/payhooks')
    env = headers.to_h { |k, v| [k.casecmp?('content-type') ? 'CONTENT_TYPE' : "HTTP_#{k.upcase.tr('-', '_')}", v] }
    ::Rack::MockRequest.new(app).post(path, env.merge(input: body))
  end

  def test_spec_5_1_4_the_endpoint_verifies_the_raw_body_and_acknowledges
    event = payment_event
    body, headers = delivery(event)
    response = post(Payhooks::Rack::Endpoint.new(@handler), body, headers)
    assert_equal 200, response.status
    assert_equal event['id'], @seen.pop
    tampered = post(Payhooks::Rack::Endpoint.new(@handler), body.sub('10.00', '99.00'), headers)
    assert_equal 400, tampered.status
    assert_equal 'bad_signature', JSON.parse(tampered.body)['error']
  end

  def test_the_endpoint_answers_only_post
    response = ::Rack::MockRequest.new(Payhooks::Rack::Endpoint.new(@handler)).get('/webhooks/payhooks')
    assert_equal 405, response.status
  end

  def test_a_body_read_before_by_a_middleware_is_rewound
    reader = lambda do |app|
      ->(env) { env['rack.input'].read; app.call(env) }
    end
    event = payment_event
    body, headers = delivery(event)
    assert_equal 200, post(reader.call(Payhooks::Rack::Endpoint.new(@handler)), body, headers).status
  end

  def test_an_oversized_body_is_413
    app = Payhooks::Rack::Endpoint.new(@handler, max_body_bytes: 100)
    body, headers = delivery(payment_event)
    assert_equal 413, post(app, body, headers).status
  end

  def test_sinatra_route
    handler = @handler
    app = Class.new(Sinatra::Base) do
      post('/webhooks/payhooks') { Payhooks::Rack.call(handler, request.env) }
    end
    event = payment_event
    body, headers = delivery(event)
    response = post(app, body, headers)
    assert_equal 200, response.status
    assert_equal({ 'received' => true }, JSON.parse(response.body))
    assert_equal event['id'], @seen.pop
    response = post(app, body, headers)
    assert JSON.parse(response.body)['duplicate']
  end
end

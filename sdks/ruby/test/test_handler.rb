# frozen_string_literal: true

require_relative 'test_helper'

# Spec 6.2 in order: verify, record the evt_ id, acknowledge at once, then process.
class TestHandler < Minitest::Test
  include TestSupport

  def setup
    @processed = Queue.new
    @store = Payhooks::Stores::Memory.new
  end

  def teardown
    @handler&.close
  end

  def handler(**options, &block)
    block ||= ->(event, _ctx) { @processed << event['id'] }
    @handler = Payhooks::WebhookHandler.new(secret: SECRET, store: @store, retry_delays: [0.01, 0.01],
                                            on_error: ->(*) {}, on_rejected: ->(*) {}, **options, &block)
  end

  def test_spec_6_2_2_acknowledges_before_the_work_runs
    release = Queue.new
    h = handler { |event, _| release.pop; @processed << event['id'] }
    event = payment_event
    body, headers = delivery(event)
    response = h.handle(body: body, headers: headers)
    assert_equal 200, response.status
    assert_equal({ 'received' => true }, JSON.parse(response.body))
    assert @processed.empty?, 'the work must not have run before the answer'
    release << :go
    assert_equal event['id'], @processed.pop
  end

  def test_spec_6_2_1_a_duplicate_is_acknowledged_and_processed_once
    h = handler
    event = payment_event
    body, headers = delivery(event)
    answers = Array.new(20) { Thread.new { h.handle(body: body, headers: headers) } }.map(&:value)
    assert(answers.all? { |a| a.status == 200 })
    assert_equal 19, answers.count { |a| JSON.parse(a.body)['duplicate'] }
    h.drain
    assert_equal 1, @processed.size
  end

  def test_spec_5_1_7_a_bad_signature_is_answered_400_with_the_reason_and_not_processed
    rejected = []
    h = handler(on_rejected: ->(e) { rejected << e.reason })
    event = payment_event
    body, headers = delivery(event, secret: "whsec_other_#{SecureRandom.hex(8)}")
    response = h.handle(body: body, headers: headers)
    assert_equal 400, response.status
    assert_equal 'bad_signature', JSON.parse(response.body)['error']
    assert_equal ['bad_signature'], rejected
    h.drain
    assert @processed.empty?
    assert_equal 0, @store.size, 'nothing was recorded'
  end

  def test_spec_6_1_1_types_not_handled_are_acknowledged_and_ignored
    h = handler(types: ['payment.succeeded'])
    event = payment_event(type: 'payment.created')
    body, headers = delivery(event)
    response = h.handle(body: body, headers: headers)
    assert_equal 200, response.status
    assert JSON.parse(response.body)['ignored']
    unknown = payment_event(type: 'payment.something_new')
    body, headers = delivery(unknown)
    assert_equal 200, h.handle(body: body, headers: headers).status
    h.drain
    assert @processed.empty?
  end

  def test_a_misspelt_type_is_refused_at_creation
    error = assert_raises(Payhooks::ConfigurationError) { handler(types: ['payment.succeded']) }
    assert_match(/unknown event type/, error.message)
  end

  def test_failed_work_is_retried_then_released_so_a_replay_is_processed
    attempts = Queue.new
    errors = []
    h = handler(on_error: ->(e, info) { errors << [e.message, info[:will_retry]] }) do |_event, ctx|
      attempts << ctx.attempt
      raise 'boom'
    end
    event = payment_event
    body, headers = delivery(event)
    assert_equal 200, h.handle(body: body, headers: headers).status
    assert_equal [1, 2, 3], Array.new(3) { attempts.pop }
    wait_until('the id to be released') { errors.length == 3 && @store.size.zero? }
    assert_equal [true, true, false], errors.map(&:last)
    # A replay after the work was given up is processed again, not acknowledged as a duplicate.
    response = h.handle(body: body, headers: headers)
    refute JSON.parse(response.body)['duplicate']
    assert_equal 1, attempts.pop
  end

  def test_the_store_down_answers_500_so_payhooks_retries
    broken = Object.new
    def broken.claim(*) = raise(IOError, 'down')
    h = Payhooks::WebhookHandler.new(secret: SECRET, store: broken, on_error: ->(*) {}) { |*| nil }
    body, headers = delivery(payment_event)
    response = h.handle(body: body, headers: headers)
    assert_equal 500, response.status
    assert_equal 'store_unavailable', JSON.parse(response.body)['error']
  ensure
    h&.close
  end

  def test_after_close_deliveries_are_answered_503
    h = handler
    h.close
    body, headers = delivery(payment_event)
    assert_equal 503, h.handle(body: body, headers: headers).status
  end

  def test_spec_6_2_3_credit_once_in_memory_runs_once_under_concurrency
    count = 0
    lock = Mutex.new
    results = Array.new(10) { Thread.new { @store.credit_once('pay_1') { lock.synchronize { count += 1 } } } }.map(&:value)
    assert_equal 1, count
    assert_equal 1, results.count(&:credited?)
    # A block that raises credits nothing: the next call credits.
    assert_raises(RuntimeError) { @store.credit_once('pay_2') { raise 'no' } }
    assert @store.credit_once('pay_2') { :ok }.credited?
  end
end

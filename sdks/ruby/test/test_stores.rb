# frozen_string_literal: true

require_relative 'test_helper'
require 'pg'
require 'redis'

# The same store duties against the real PostgreSQL and Redis (spec 6.2.1, 6.2.3, 8).
module StoreDuties
  include TestSupport

  def test_spec_6_2_1_concurrent_identical_claims_get_one_claim
    event = payment_event
    claims = Array.new(12) { Thread.new { store.claim(event, 60) } }.map(&:value)
    assert_equal 1, claims.compact.length
  end

  def test_a_done_id_stays_seen_and_a_released_one_is_forgotten
    done = payment_event
    claim = store.claim(done, 60)
    store.complete(claim)
    assert_nil store.claim(done, 60)
    released = payment_event
    store.release(store.claim(released, 60))
    refute_nil store.claim(released, 60)
  end

  def test_an_expired_lease_is_taken_over
    event = payment_event
    first = store.claim(event, 0.05)
    refute_nil first
    second = wait_until('the lease to expire') { store.claim(event, 60) }
    # The first holder's late writes are fenced by its token: the id stays the second's.
    store.release(first)
    assert_nil store.claim(event, 60)
    store.release(second)
    refute_nil store.claim(event, 60)
  end

  def test_spec_6_2_3_credit_once_runs_once_under_concurrency
    payment_id = "pay_#{SecureRandom.hex(6)}"
    ran = Queue.new
    results = Array.new(8) { Thread.new { store.credit_once(payment_id) { |*| ran << 1; :credited } } }.map(&:value)
    assert_equal 1, ran.size
    assert_equal [true], results.select(&:credited?).map(&:credited)
    assert_equal :credited, results.find(&:credited?).value
  end

  def test_credit_once_after_a_failure_credits_on_the_next_call
    payment_id = "pay_#{SecureRandom.hex(6)}"
    assert_raises(RuntimeError) { store.credit_once(payment_id) { |*| raise 'ledger down' } }
    assert store.credit_once(payment_id) { |*| :ok }.credited?
    refute store.credit_once(payment_id) { |*| :again }.credited?
  end

  def test_retention_under_30_days_is_refused
    assert_raises(Payhooks::ConfigurationError) { short_retention_store }
  end
end

class TestPostgresStore < Minitest::Test
  include StoreDuties

  def self.database
    @database ||= begin
      url, drop = TestSupport.create_database
      Minitest.after_run { drop.call }
      url
    end
  end

  # Made before the test's threads start: a lazy `||=` from several threads would make several.
  def setup
    @store = Payhooks::Stores::Postgres.new(url: self.class.database)
  end

  attr_reader :store

  def teardown
    @store&.close
  end

  def short_retention_store
    Payhooks::Stores::Postgres.new(url: self.class.database, retention: 3600)
  end

  def query(sql, params = [])
    conn = PG.connect(self.class.database)
    conn.exec_params(sql, params).to_a
  ensure
    conn&.close
  end

  def test_spec_6_2_3_the_credit_marker_and_the_ledger_row_commit_together
    query('CREATE TABLE IF NOT EXISTS ledger (payment_id text, amount numeric)')
    payment_id = "pay_#{SecureRandom.hex(6)}"
    assert_raises(RuntimeError) do
      store.credit_once(payment_id) do |conn|
        conn.exec_params('INSERT INTO ledger VALUES ($1, 1)', [payment_id])
        raise 'after the ledger row'
      end
    end
    assert_empty query('SELECT * FROM ledger WHERE payment_id = $1', [payment_id])
    store.credit_once(payment_id) { |conn| conn.exec_params('INSERT INTO ledger VALUES ($1, 1)', [payment_id]) }
    assert_equal 1, query('SELECT * FROM ledger WHERE payment_id = $1', [payment_id]).length
  end

  def test_durable_work_survives_a_restart_and_failed_work_is_kept
    events = []
    calls = Queue.new
    failing = Payhooks::WebhookHandler.new(secret: SECRET, store: store, retry_delays: [0.01], poll_interval: 0.05,
                                           on_error: ->(*) {}) do |event, ctx|
      calls << ctx.attempt
      raise 'work failed' if event['data']['object']['metadata']['account'] == 'fail'

      events << event['id']
    end
    bad = payment_event(account: 'fail')
    body, headers = delivery(bad)
    assert_equal 200, failing.handle(body: body, headers: headers).status
    assert_equal [1, 2], Array.new(2) { calls.pop }
    wait_until('the event to be kept as failed') do
      query('SELECT state, last_error FROM payhooks_events WHERE event_id = $1', [bad['id']]).first&.fetch('state') == 'failed'
    end
    assert_match(/work failed/, query('SELECT last_error FROM payhooks_events WHERE event_id = $1', [bad['id']]).first['last_error'])
    # A replay of a failed event is processed again, not a duplicate.
    refute JSON.parse(failing.handle(body: body, headers: headers).body)['duplicate']
    failing.close
    # Work left pending by a dead process is picked up by the next one.
    pending = payment_event
    store.claim(pending, 60).then { |c| store.retry_later(c, 0, 60, 'left behind') }
    again = Payhooks::WebhookHandler.new(secret: SECRET, store: store, poll_interval: 0.05) { |event, _| events << event['id'] }
    again.poll
    wait_until('the pending event to be processed') { events.include?(pending['id']) }
    again.close
  end

  def test_purge_deletes_done_ids_past_retention
    event = payment_event
    store.complete(store.claim(event, 60))
    query("UPDATE payhooks_events SET updated_at = now() - interval '31 days' WHERE event_id = $1", [event['id']])
    assert_operator store.purge, :>=, 1
    refute_nil store.claim(event, 60)
  end
end

class TestRedisStore < Minitest::Test
  include StoreDuties

  def setup
    @store = Payhooks::Stores::Redis.new(client: Redis.new(url: REDIS_URL), prefix: "payhooks-rb-test:#{SecureRandom.hex(4)}:")
  end

  attr_reader :store

  def short_retention_store
    Payhooks::Stores::Redis.new(client: Redis.new(url: REDIS_URL), retention: 3600)
  end

  def test_a_done_id_is_kept_30_days
    event = payment_event
    store.complete(store.claim(event, 60))
    ttl = Redis.new(url: REDIS_URL).pttl(store.event_key(event['id']))
    assert_operator ttl, :>, (29 * 24 * 3600 * 1000)
  end
end

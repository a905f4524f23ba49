# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path('../lib', __dir__)
require 'minitest/autorun'
require 'json'
require 'securerandom'
require 'payhooks'

module TestSupport
  VECTORS_FILE = File.expand_path('../../../packages/contract/test-vectors/webhook-signatures.json', __dir__)
  PG_ADMIN_URL = ENV.fetch('PAYHOOKS_TEST_PG_URL', 'postgres://postgres@127.0.0.1:5432/postgres')
  REDIS_URL = ENV.fetch('PAYHOOKS_TEST_REDIS_URL', 'redis://127.0.0.1:6379/0')
  SECRET = "whsec_test_#{SecureRandom.hex(24)}".freeze

  module_function

  def vectors
    @vectors ||= JSON.parse(File.read(VECTORS_FILE))
  end

  def payment_event(account: 'acct_1', amount: '10.00', type: 'payment.succeeded', payment_id: "pay_#{SecureRandom.hex(8)}")
    {
      'id' => "evt_#{SecureRandom.hex(10)}", 'object' => 'event', 'type' => type, 'api_version' => 'v1',
      'environment' => 'test', 'merchant_id' => 'mch_test', 'created_at' => '2026-01-01T00:00:00Z',
      'data' => { 'object' => { 'id' => payment_id, 'object' => 'payment', 'status' => 'succeeded', 'amount' => amount,
                                'asset_code' => 'USDC.ETH', 'metadata' => { 'account' => account, 'note' => 'café ✓' } } }
    }
  end

  def delivery(event, secret: SECRET, timestamp: Time.now.to_i)
    Payhooks::Webhook.sign_test_delivery(event: event, secret: secret, timestamp: timestamp)
  end

  # Polls until the block is truthy (never a fixed sleep as the assertion).
  def wait_until(what, timeout: 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      value = yield
      return value if value
      raise Minitest::Assertion, "timed out waiting for #{what}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end

  # A fresh PostgreSQL database for a test class; returns [url, drop].
  def create_database
    require 'pg'
    name = "payhooks_rb_#{SecureRandom.hex(6)}"
    admin = PG.connect(PG_ADMIN_URL)
    admin.exec("CREATE DATABASE #{name}")
    admin.close
    url = PG_ADMIN_URL.sub(%r{/[^/]*\z}, "/#{name}")
    drop = lambda do
      a = PG.connect(PG_ADMIN_URL)
      a.exec("DROP DATABASE IF EXISTS #{name} WITH (FORCE)")
      a.close
    end
    [url, drop]
  end
end

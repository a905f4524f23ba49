# frozen_string_literal: true

# The smallest real payhooks receiver in Ruby: Sinatra, the payhooks gem with its PostgreSQL store,
# credit_once into a ledger table. Run it with ./start (PORT, DATABASE_URL, PAYHOOKS_WEBHOOK_SECRET).
$LOAD_PATH.unshift File.expand_path('../../sdks/ruby/lib', __dir__) # the gem, from this repository
require 'payhooks'
require 'pg'
require 'sinatra/base'
require 'webrick'
require_relative 'database'

secret = ENV.fetch('PAYHOOKS_WEBHOOK_SECRET', '').split(',').map(&:strip).reject(&:empty?)
if secret.empty?
  warn "Set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_ signing secret (comma-separated during a rotation)."
  exit 1
end
database_url = ENV.fetch('DATABASE_URL', Database::DEFAULT_URL)
begin
  Database.create_if_missing(database_url)
  Database.migrate(database_url)
rescue PG::Error => e
  warn "The receiver could not open its database: #{e.message.strip}. Check that PostgreSQL runs and DATABASE_URL " \
       "(default #{Database::DEFAULT_URL}) is right."
  exit 1
end

STORE = Payhooks::Stores::Postgres.new(url: database_url) # payhooks_events and payhooks_credits, created on first use

# Credits a succeeded payment exactly once, whoever asks: the webhook, a replay, a status poll.
def credit_payment(payment)
  # `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
  if payment.dig('metadata', 'payhooks_check') == true
    puts "[receiver] #{payment['id']} is a payhooks check-receiver test payment; nothing to credit"
    return
  end
  account = payment.dig('metadata', 'account')
  # Retried, then kept as a failed row in payhooks_events for a human to look at.
  raise "payment #{payment['id']} has no metadata.account" unless account.is_a?(String)
  STORE.credit_once(payment['id']) do |conn|
    conn.exec_params('INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES ($1, $2, $3, $4)',
                     [account, payment['amount'], payment['asset_code'], payment['id']])
  end
end

WEBHOOKS = Payhooks::WebhookHandler.new(secret: secret, store: STORE, types: ['payment.succeeded']) do |event, _context|
  # Every other type: 200 and ignored (the catalog grows).
  credit_payment(event['data']['object']) if Payhooks.payment_event?(event) && event['data']['object']['status'] == 'succeeded'
end

class ReceiverApp < Sinatra::Base
  set :server, 'webrick'
  set :bind, ENV.fetch('HOST', '0.0.0.0')
  set :port, Integer(ENV.fetch('PORT', '4242'))
  set :logging, false
  set :server_settings, { AccessLog: [], Logger: WEBrick::Log.new($stderr, WEBrick::Log::WARN) }

  # The signature covers the raw bytes: the adapter reads rack.input, never parsed params.
  post('/webhooks/payhooks') { Payhooks::Rack.call(WEBHOOKS, request.env) }

  # Where the checkout sends the customer back. It never credits: the redirect may be forged, may
  # come before the webhook, or never come.
  get('/checkout/return') { 'Thanks! Your payment is being confirmed.' }

  get('/accounts/:account/balance') do
    content_type :json
    rows = Database.balance(STORE, params['account'])
    JSON.generate(account: params['account'], balances: rows)
  end
end

at_exit { WEBHOOKS.close } # running work finishes; queued retries stay in PostgreSQL
puts "receiver listening on http://localhost:#{ReceiverApp.port}/webhooks/payhooks"
$stdout.flush
ReceiverApp.run!

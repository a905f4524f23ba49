# frozen_string_literal: true

require 'pg'
require 'uri'

# The receiver's own PostgreSQL database, created on first start when missing (as createdb would).
module Database
  DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/receiver_ruby'

  LEDGER_SQL = <<~SQL
    CREATE TABLE IF NOT EXISTS ledger_entries (
      id          bigserial PRIMARY KEY,
      account     text NOT NULL,
      amount      numeric(20, 2) NOT NULL,
      asset_code  text NOT NULL,
      payment_id  text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX IF NOT EXISTS ledger_entries_account_idx ON ledger_entries (account);
  SQL

  module_function

  def create_if_missing(url)
    PG.connect(url).close
  rescue PG::ConnectionBad => e
    raise unless e.message.include?('does not exist')

    name = URI.decode_www_form_component(URI(url).path.delete_prefix('/'))
    maintenance = URI(url).tap { |u| u.path = '/postgres' }.to_s
    admin = PG.connect(maintenance)
    begin
      admin.exec("CREATE DATABASE #{admin.quote_ident(name)}")
      puts "created database #{name}"
    rescue PG::DuplicateDatabase
      nil # another process created it first
    ensure
      admin.close
    end
  end

  def migrate(url)
    conn = PG.connect(url)
    conn.exec('SET client_min_messages = warning')
    conn.exec(LEDGER_SQL)
  ensure
    conn&.close
  end

  # One entry per asset, amounts with two decimals.
  def balance(store, account)
    store.with_connection do |conn|
      conn.exec_params(<<~SQL, [account]).to_a
        SELECT asset_code, sum(amount)::text AS balance FROM ledger_entries
        WHERE account = $1 GROUP BY asset_code ORDER BY asset_code
      SQL
    end
  end
end

# frozen_string_literal: true

require 'json'
require 'securerandom'
require_relative 'store'
require_relative '../generated'

module Payhooks
  module Stores
    # PostgreSQL store (the pg gem). Durable: the seen id and the event to process are one row,
    # written by one statement, so an acknowledged event is never without its work. States:
    # processing (leased to one worker), pending (waiting for a retry), done (kept 30 days, then
    # purged), failed (every attempt failed; kept until requeued or replayed). The tables are the
    # ones every payhooks receiver library uses (payhooks_events, payhooks_credits).
    #
    # credit_once(payment_id) { |conn| ... } runs the block inside a transaction that also
    # inserts the payment id into the credits table: write your ledger row with +conn+ and both
    # commit together.
    class Postgres
      include Store

      IDENT = /\A[A-Za-z_][A-Za-z0-9_]{0,62}\z/

      attr_reader :table, :credits_table

      # +url+: a PostgreSQL URL (the store keeps a small pool of its own), or +pool+: anything
      # with +with { |pg_connection| ... }+ (the connection_pool gem; wrap ActiveRecord's
      # +raw_connection+ the same way).
      def initialize(url: nil, pool: nil, pool_size: 5, table: ReceiverTables::EVENTS_TABLE,
                     credits_table: ReceiverTables::CREDITS_TABLE, retention: DEDUP_RETENTION, auto_migrate: true)
        raise ConfigurationError, 'payhooks: Postgres store needs url: or pool:' if url.nil? && pool.nil?

        require 'pg'
        @pool = pool || SimplePool.new(pool_size) { PG.connect(url) }
        @table = table
        @credits_table = credits_table
        @t = quote(table)
        @c = quote(credits_table)
        @base = table.split('.').last
        @retention = Internal.check_retention(retention)
        @auto_migrate = auto_migrate
        @ready = false
        @ready_lock = Mutex.new
      end

      def durable?
        true
      end

      def schema_sql
        ReceiverTables.ddl(@t, @c, @base)
      end

      # Creates the tables if they do not exist (safe from several processes at once).
      def migrate
        with_conn do |conn|
          conn.transaction do
            # Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
            conn.exec("SELECT pg_advisory_xact_lock(hashtext('#{ReceiverTables::MIGRATION_LOCK}'))")
            conn.exec('SET LOCAL client_min_messages = warning') # no "already exists, skipping" notices
            conn.exec(schema_sql)
          end
        end
        @ready = true
      end

      def claim(event, lease)
        ensure_ready
        token = SecureRandom.hex(16)
        # Insert-or-ignore. An existing row is taken over only when its work failed for good (a
        # replay re-runs it) or its holder's lease expired (the holder died).
        rows = exec(<<~SQL, [event['id'], event['type'], JSON.generate(event), token, ms(lease)])
          INSERT INTO #{@t} AS e (event_id, event_type, state, payload, attempts, token, locked_until)
          VALUES ($1, $2, 'processing', $3::jsonb, 1, $4, now() + $5::float8 * interval '1 millisecond')
          ON CONFLICT (event_id) DO UPDATE SET
            state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
            attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
            locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, updated_at = now()
          WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
          RETURNING attempts
        SQL
        row = rows.first
        row && Claim.new(event['id'], token, Integer(row['attempts']))
      end

      def complete(claim)
        exec(<<~SQL, [claim.event_id, claim.token])
          UPDATE #{@t} SET state = 'done', payload = NULL, token = NULL, locked_until = NULL,
            next_attempt_at = NULL, last_error = NULL, updated_at = now()
          WHERE event_id = $1 AND token = $2
        SQL
      end

      def retry_later(claim, delay, _lease, error = nil)
        exec(<<~SQL, [claim.event_id, claim.token, ms(delay), Internal.error_text(error)])
          UPDATE #{@t} SET state = 'pending', token = NULL, locked_until = NULL,
            next_attempt_at = now() + $3::float8 * interval '1 millisecond', last_error = $4, updated_at = now()
          WHERE event_id = $1 AND token = $2
        SQL
      end

      def release(claim)
        exec("DELETE FROM #{@t} WHERE event_id = $1 AND token = $2", [claim.event_id, claim.token])
      end

      def mark_failed(claim, error)
        exec(<<~SQL, [claim.event_id, claim.token, Internal.error_text(error)])
          UPDATE #{@t} SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL,
            last_error = $3, updated_at = now()
          WHERE event_id = $1 AND token = $2
        SQL
      end

      # Claims work that is due (retries) or abandoned (expired leases): [[claim, event], ...].
      def claim_due(limit, lease)
        return [] if limit <= 0

        ensure_ready
        rows = exec(<<~SQL, [limit, ms(lease)])
          UPDATE #{@t} AS e SET state = 'processing', attempts = e.attempts + 1,
            token = gen_random_uuid()::text, locked_until = now() + $2::float8 * interval '1 millisecond',
            next_attempt_at = NULL, updated_at = now()
          FROM (
            SELECT event_id FROM #{@t}
            WHERE (state = 'pending' AND next_attempt_at <= now())
               OR (state = 'processing' AND locked_until < now())
            ORDER BY COALESCE(next_attempt_at, locked_until)
            LIMIT $1
            FOR UPDATE SKIP LOCKED
          ) due
          WHERE e.event_id = due.event_id
          RETURNING e.event_id, e.attempts, e.token, e.payload
        SQL
        rows.map { |r| [Claim.new(r['event_id'], r['token'], Integer(r['attempts'])), JSON.parse(r['payload'])] }
      end

      # Puts failed events (all, or one) back in the queue; returns how many.
      def requeue_failed(event_id = nil)
        ensure_ready
        sql = "UPDATE #{@t} SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now() WHERE state = 'failed'"
        result = event_id.nil? ? exec_result(sql, []) : exec_result("#{sql} AND event_id = $1", [event_id])
        result.cmd_tuples
      end

      # Deletes done ids older than the retention; returns how many.
      def purge
        ensure_ready
        exec_result("DELETE FROM #{@t} WHERE state = 'done' AND updated_at < now() - $1::float8 * interval '1 millisecond'",
                    [ms(@retention)]).cmd_tuples
      end

      def credit_once(payment_id)
        Internal.check_payment_id(payment_id)
        ensure_ready
        with_conn do |conn|
          conn.exec('BEGIN')
          begin
            # The primary key makes a concurrent second insert wait for the first transaction:
            # it then conflicts (first committed: credited) or goes ahead (first rolled back).
            marker = conn.exec_params("INSERT INTO #{@c} (payment_id) VALUES ($1) ON CONFLICT (payment_id) DO NOTHING",
                                      [payment_id])
            if marker.cmd_tuples.zero?
              conn.exec('ROLLBACK')
              return CreditResult.new(false, nil)
            end
            value = yield conn
            conn.exec('COMMIT')
            CreditResult.new(true, value)
          rescue StandardError, ScriptError
            begin
              conn.exec('ROLLBACK')
            rescue StandardError
              nil # a broken connection: the pool replaces it
            end
            raise
          end
        end
      end

      # Runs the block with one of the store's connections (your own queries, e.g. reading the ledger).
      def with_connection(&block)
        with_conn(&block)
      end

      def close
        @pool.shutdown if @pool.respond_to?(:shutdown)
      end

      private

      def quote(name)
        parts = name.split('.')
        raise ConfigurationError, "payhooks: invalid table name #{name.inspect}" if parts.length > 2 || parts.any? { |p| !p.match?(IDENT) }

        parts.map { |p| %("#{p}") }.join('.')
      end

      def ms(seconds)
        (seconds * 1000.0).to_f
      end

      def ensure_ready
        return if @ready || !@auto_migrate

        @ready_lock.synchronize { migrate unless @ready }
      end

      def with_conn(&block)
        @pool.with(&block)
      end

      def exec(sql, params)
        exec_result(sql, params).to_a
      end

      def exec_result(sql, params)
        with_conn { |conn| conn.exec_params(sql, params) }
      end

      # A fixed-size pool of connections, each used by one thread at a time. A connection whose
      # socket broke (a restart, a failover) is replaced on its next checkout.
      class SimplePool
        def initialize(size, &connect)
          @connect = connect
          @free = Queue.new
          @size = size
          @made = 0
          @lock = Mutex.new
        end

        def with
          conn = checkout
          begin
            yield conn
          ensure
            checkin(conn)
          end
        end

        def shutdown
          @lock.synchronize do
            until @free.empty?
              conn = @free.pop(true)
              conn.close unless conn.finished?
              @made -= 1
            end
          end
        end

        private

        def checkout
          @lock.synchronize do
            if @free.empty? && @made < @size
              @made += 1
              return connect_or_forget
            end
          end
          conn = @free.pop
          return conn if conn.status == PG::CONNECTION_OK

          conn.close unless conn.finished?
          @lock.synchronize { @made -= 1 }
          @lock.synchronize do
            @made += 1
            connect_or_forget
          end
        end

        def connect_or_forget
          @connect.call
        rescue StandardError
          @made -= 1
          raise
        end

        def checkin(conn)
          @free << conn
        end
      end
      private_constant :SimplePool, :IDENT
    end
  end
end

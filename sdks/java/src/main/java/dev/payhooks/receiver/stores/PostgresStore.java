package dev.payhooks.receiver.stores;

import dev.payhooks.receiver.Event;
import dev.payhooks.receiver.Json;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * PostgreSQL store over JDBC. Durable: the seen id and the event to process are one row, written by
 * one statement, so an acknowledged event is never without its work. States: processing (leased to
 * one worker), pending (waiting for a retry), done (kept 30 days, then purged), failed (every
 * attempt failed; kept until requeued or replayed). The tables are the ones every payhooks receiver
 * library uses ({@code payhooks_events}, {@code payhooks_credits}).
 *
 * <p>{@link #creditOnce} runs the work inside a transaction that also inserts the payment id into
 * the credits table: write your ledger row with the {@link Connection} it gets and both commit
 * together.
 */
public final class PostgresStore implements WebhookStore {
  /** Where connections come from: a pool's {@link DataSource}, or {@link #forUrl}. */
  @FunctionalInterface
  public interface ConnectionSource {
    Connection get() throws SQLException;
  }

  private static final Pattern IDENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private final ConnectionSource connections;
  private final String table;
  private final String credits;
  private final String base;
  private final Duration retention;
  private volatile boolean ready;

  /** A store on a pool (HikariCP, the driver's PGSimpleDataSource, ...). */
  public PostgresStore(DataSource dataSource) {
    this(dataSource::getConnection, ReceiverTables.EVENTS_TABLE, ReceiverTables.CREDITS_TABLE, DEDUP_RETENTION);
  }

  /** A store opening a connection per operation with {@link DriverManager} (fine for small receivers; use a pool otherwise). */
  public static PostgresStore forUrl(String jdbcUrl) {
    return new PostgresStore(() -> DriverManager.getConnection(jdbcUrl), ReceiverTables.EVENTS_TABLE, ReceiverTables.CREDITS_TABLE, DEDUP_RETENTION);
  }

  public PostgresStore(ConnectionSource connections, String table, String creditsTable, Duration retention) {
    this.connections = connections;
    this.table = quote(table);
    this.credits = quote(creditsTable);
    this.base = table.substring(table.lastIndexOf('.') + 1);
    this.retention = WebhookStore.checkRetention(retention);
  }

  private static String quote(String name) {
    String[] parts = name.split("\\.", -1);
    if (parts.length > 2) throw new IllegalArgumentException("payhooks: invalid table name " + name);
    StringBuilder out = new StringBuilder();
    for (String p : parts) {
      if (!IDENT.matcher(p).matches()) throw new IllegalArgumentException("payhooks: invalid table name " + name);
      if (out.length() > 0) out.append('.');
      out.append('"').append(p).append('"');
    }
    return out.toString();
  }

  @Override
  public boolean durable() {
    return true;
  }

  /** The DDL {@link #migrate()} runs, for your own migration tool. */
  public String schemaSql() {
    return ReceiverTables.ddl(table, credits, base);
  }

  /** Creates the tables if they do not exist (safe from several processes at once). */
  public void migrate() throws SQLException {
    try (Connection c = connections.get()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        // Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
        s.execute("SELECT pg_advisory_xact_lock(hashtext('" + ReceiverTables.MIGRATION_LOCK + "'))");
        s.execute("SET LOCAL client_min_messages = warning");
        s.execute(schemaSql());
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      }
    }
    ready = true;
  }

  private void ensureReady() throws SQLException {
    if (!ready) {
      synchronized (this) {
        if (!ready) migrate();
      }
    }
  }

  @Override
  public Claim claim(Event event, Duration lease) throws SQLException {
    ensureReady();
    String token = UUID.randomUUID().toString();
    // Insert-or-ignore. An existing row is taken over only when its work failed for good (a
    // replay re-runs it) or its holder's lease expired (the holder died).
    String sql =
        """
        INSERT INTO %s AS e (event_id, event_type, state, payload, attempts, token, locked_until)
        VALUES (?, ?, 'processing', ?::jsonb, 1, ?, now() + ?::float8 * interval '1 millisecond')
        ON CONFLICT (event_id) DO UPDATE SET
          state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
          attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
          locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, updated_at = now()
        WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
        RETURNING attempts
        """
            .formatted(table);
    try (Connection c = connections.get();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, event.id());
      ps.setString(2, event.type());
      ps.setString(3, event.toJson());
      ps.setString(4, token);
      ps.setDouble(5, lease.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new Claim(event.id(), token, rs.getInt(1)) : null;
      }
    }
  }

  @Override
  public void complete(Claim claim) throws SQLException {
    update(
        "UPDATE %s SET state = 'done', payload = NULL, token = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = NULL, updated_at = now() WHERE event_id = ? AND token = ?",
        claim.eventId(), claim.token());
  }

  @Override
  public void retryLater(Claim claim, Duration delay, Duration lease, Throwable error) throws SQLException {
    update(
        "UPDATE %s SET state = 'pending', token = NULL, locked_until = NULL, next_attempt_at = now() + ?::float8 * interval '1 millisecond', last_error = ?, updated_at = now() WHERE event_id = ? AND token = ?",
        (double) delay.toMillis(), WebhookStore.errorText(error), claim.eventId(), claim.token());
  }

  @Override
  public void release(Claim claim) throws SQLException {
    update("DELETE FROM %s WHERE event_id = ? AND token = ?", claim.eventId(), claim.token());
  }

  @Override
  public void markFailed(Claim claim, Throwable error) throws SQLException {
    update(
        "UPDATE %s SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = ?, updated_at = now() WHERE event_id = ? AND token = ?",
        WebhookStore.errorText(error), claim.eventId(), claim.token());
  }

  @Override
  @SuppressWarnings("unchecked")
  public List<ClaimedEvent> claimDue(int limit, Duration lease) throws Exception {
    if (limit <= 0) return List.of();
    ensureReady();
    String sql =
        """
        UPDATE %1$s AS e SET state = 'processing', attempts = e.attempts + 1,
          token = gen_random_uuid()::text, locked_until = now() + ?::float8 * interval '1 millisecond',
          next_attempt_at = NULL, updated_at = now()
        FROM (
          SELECT event_id FROM %1$s
          WHERE (state = 'pending' AND next_attempt_at <= now())
             OR (state = 'processing' AND locked_until < now())
          ORDER BY COALESCE(next_attempt_at, locked_until)
          LIMIT ?
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE e.event_id = due.event_id
        RETURNING e.event_id, e.attempts, e.token, e.payload::text
        """
            .formatted(table);
    List<ClaimedEvent> out = new ArrayList<>();
    try (Connection c = connections.get();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setDouble(1, lease.toMillis());
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Event event = new Event((Map<String, Object>) Json.parse(rs.getString(4)));
          out.add(new ClaimedEvent(new Claim(rs.getString(1), rs.getString(3), rs.getInt(2)), event));
        }
      }
    }
    return out;
  }

  /** Puts failed events (all, or the one given) back in the queue; returns how many. */
  public int requeueFailed(String eventId) throws SQLException {
    ensureReady();
    String sql = "UPDATE %s SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now() WHERE state = 'failed'";
    return eventId == null ? update(sql) : update(sql + " AND event_id = ?", eventId);
  }

  @Override
  public int purge() throws SQLException {
    ensureReady();
    return update(
        "DELETE FROM %s WHERE state = 'done' AND updated_at < now() - ?::float8 * interval '1 millisecond'", (double) retention.toMillis());
  }

  /**
   * Runs {@code work} at most once per payment id, inside a transaction that first inserts the id
   * into the credits table. If the work throws, both roll back and the exception is rethrown, so a
   * later call can credit.
   */
  public <T> CreditResult<T> creditOnce(String paymentId, CreditWork<T, Connection> work) throws Exception {
    WebhookStore.checkPaymentId(paymentId);
    ensureReady();
    try (Connection c = connections.get()) {
      c.setAutoCommit(false);
      try {
        // The primary key makes a concurrent second insert wait for the first transaction: it then
        // conflicts (first committed: credited) or goes ahead (first rolled back).
        int inserted;
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + credits + " (payment_id) VALUES (?) ON CONFLICT (payment_id) DO NOTHING")) {
          ps.setString(1, paymentId);
          inserted = ps.executeUpdate();
        }
        if (inserted == 0) {
          c.rollback();
          return CreditResult.notCredited();
        }
        T value = work.run(c);
        c.commit();
        return new CreditResult<>(true, value);
      } catch (Exception | Error e) {
        try {
          c.rollback();
        } catch (SQLException ignored) {
          // a broken connection is closed below
        }
        throw e;
      }
    }
  }

  /** Runs {@code work} with one of the store's connections (your own queries, e.g. reading the ledger). */
  public <T> T withConnection(CreditWork<T, Connection> work) throws Exception {
    try (Connection c = connections.get()) {
      return work.run(c);
    }
  }

  private int update(String sqlWithTable, Object... params) throws SQLException {
    try (Connection c = connections.get();
        PreparedStatement ps = c.prepareStatement(sqlWithTable.formatted(table))) {
      for (int i = 0; i < params.length; i++) ps.setObject(i + 1, params[i]);
      return ps.executeUpdate();
    }
  }
}

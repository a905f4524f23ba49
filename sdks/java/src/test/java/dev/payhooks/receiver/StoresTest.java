package dev.payhooks.receiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.payhooks.receiver.stores.PostgresStore;
import dev.payhooks.receiver.stores.RedisStore;
import dev.payhooks.receiver.stores.RespClient;
import dev.payhooks.receiver.stores.WebhookStore;
import dev.payhooks.receiver.stores.WebhookStore.Claim;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The same store duties against the real PostgreSQL and Redis (spec 6.2.1, 6.2.3, 8). */
class StoresTest {
  static String databaseUrl;

  @BeforeAll
  static void database() throws Exception {
    databaseUrl = TestSupport.createDatabase();
  }

  static Event event() {
    return new Event(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
  }

  static <T> List<T> concurrently(int n, Callable<T> task) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) futures.add(pool.submit(task));
      List<T> out = new ArrayList<>();
      for (Future<T> f : futures) out.add(f.get());
      return out;
    } finally {
      pool.shutdown();
    }
  }

  abstract static class Duties {
    abstract WebhookStore store();

    abstract boolean creditOnce(String paymentId, AtomicInteger ran) throws Exception;

    @Test
    void spec_6_2_1_concurrentIdenticalClaimsGetOneClaim() throws Exception {
      WebhookStore store = store();
      Event e = event();
      List<Claim> claims = concurrently(12, () -> store.claim(e, Duration.ofMinutes(1)));
      assertEquals(1, claims.stream().filter(c -> c != null).count());
    }

    @Test
    void aDoneIdStaysSeenAndAReleasedOneIsForgotten() throws Exception {
      WebhookStore store = store();
      Event done = event();
      store.complete(store.claim(done, Duration.ofMinutes(1)));
      assertNull(store.claim(done, Duration.ofMinutes(1)));
      Event released = event();
      store.release(store.claim(released, Duration.ofMinutes(1)));
      assertNotNull(store.claim(released, Duration.ofMinutes(1)));
    }

    @Test
    void anExpiredLeaseIsTakenOverAndTheOldHolderIsFenced() throws Exception {
      WebhookStore store = store();
      Event e = event();
      Claim first = store.claim(e, Duration.ofMillis(50));
      assertNotNull(first);
      Claim[] second = new Claim[1];
      TestSupport.waitUntil("the lease to expire", () -> {
        try {
          second[0] = store.claim(e, Duration.ofMinutes(1));
          return second[0] != null;
        } catch (Exception ex) {
          throw new RuntimeException(ex);
        }
      });
      store.release(first); // fenced: the id stays the second holder's
      assertNull(store.claim(e, Duration.ofMinutes(1)));
      store.release(second[0]);
      assertNotNull(store.claim(e, Duration.ofMinutes(1)));
    }

    @Test
    void spec_6_2_3_creditOnceRunsOnceUnderConcurrency() throws Exception {
      String paymentId = "pay_" + UUID.randomUUID();
      AtomicInteger ran = new AtomicInteger();
      List<Boolean> results = concurrently(8, () -> creditOnce(paymentId, ran));
      assertEquals(1, ran.get());
      assertEquals(1, results.stream().filter(b -> b).count());
    }
  }

  @Nested
  class Postgres extends Duties {
    final PostgresStore store = PostgresStore.forUrl(databaseUrl);

    WebhookStore store() {
      return store;
    }

    boolean creditOnce(String paymentId, AtomicInteger ran) throws Exception {
      return store.creditOnce(paymentId, tx -> ran.incrementAndGet()).credited();
    }

    long ledgerRows(String paymentId) throws Exception {
      try (Connection c = DriverManager.getConnection(databaseUrl);
          PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM ledger WHERE payment_id = ?")) {
        ps.setString(1, paymentId);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    }

    @Test
    void spec_6_2_3_theCreditMarkerAndTheLedgerRowCommitTogether() throws Exception {
      try (Connection c = DriverManager.getConnection(databaseUrl)) {
        c.createStatement().execute("CREATE TABLE IF NOT EXISTS ledger (payment_id text, amount numeric)");
      }
      String paymentId = "pay_" + UUID.randomUUID();
      assertThrows(IllegalStateException.class, () -> store.creditOnce(paymentId, tx -> {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO ledger VALUES (?, 1)")) {
          ps.setString(1, paymentId);
          ps.executeUpdate();
        }
        throw new IllegalStateException("after the ledger row");
      }));
      assertEquals(0, ledgerRows(paymentId));
      store.creditOnce(paymentId, tx -> {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO ledger VALUES (?, 1)")) {
          ps.setString(1, paymentId);
          return ps.executeUpdate();
        }
      });
      assertEquals(1, ledgerRows(paymentId));
      assertTrue(!store.creditOnce(paymentId, tx -> 0).credited());
    }

    @Test
    void durableWorkIsKeptAsFailedAndPickedUpByTheNextProcess() throws Exception {
      List<String> done = new java.util.concurrent.CopyOnWriteArrayList<>();
      WebhookHandler failing = WebhookHandler.builder(TestSupport.SECRET, store)
          .retryDelays(List.of(Duration.ofMillis(10)))
          .pollInterval(Duration.ofMillis(50))
          .onError((e, i) -> {})
          .onEvent((ev, ctx) -> { throw new IllegalStateException("work failed"); })
          .build();
      Map<String, Object> bad = TestSupport.paymentEvent("fail", "payment.succeeded");
      var d = TestSupport.delivery(bad);
      assertEquals(200, failing.handle(d.body(), d.headers()).status());
      TestSupport.waitUntil("the event to be kept as failed", () -> "failed".equals(stateOf((String) bad.get("id"))));
      failing.close();
      // Work left pending by a dead process is picked up by the next one.
      Event pending = event();
      Claim claim = store.claim(pending, Duration.ofMinutes(1));
      store.retryLater(claim, Duration.ZERO, Duration.ofMinutes(1), new RuntimeException("left behind"));
      WebhookHandler next = WebhookHandler.builder(TestSupport.SECRET, store)
          .pollInterval(Duration.ofMillis(50))
          .onEvent((ev, ctx) -> done.add(ev.id()))
          .build();
      TestSupport.waitUntil("the pending event to be processed", () -> done.contains(pending.id()));
      next.close();
      assertEquals(1, store.requeueFailed((String) bad.get("id")));
    }

    String stateOf(String eventId) {
      try (Connection c = DriverManager.getConnection(databaseUrl);
          PreparedStatement ps = c.prepareStatement("SELECT state FROM payhooks_events WHERE event_id = ?")) {
        ps.setString(1, eventId);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? rs.getString(1) : null;
        }
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    }
  }

  @Nested
  class Redis extends Duties {
    final RespClient client = new RespClient(TestSupport.REDIS_URL);
    final RedisStore store =
        new RedisStore(client, "payhooks-java-test:" + UUID.randomUUID() + ":", WebhookStore.DEDUP_RETENTION, Duration.ofSeconds(10));

    WebhookStore store() {
      return store;
    }

    boolean creditOnce(String paymentId, AtomicInteger ran) throws Exception {
      return store.creditOnce(paymentId, tx -> ran.incrementAndGet()).credited();
    }

    @Test
    void aDoneIdIsKept30Days() throws Exception {
      Event e = event();
      store.complete(store.claim(e, Duration.ofMinutes(1)));
      long ttl = (Long) client.call("PTTL", store.eventKey(e.id()));
      assertTrue(ttl > Duration.ofDays(29).toMillis(), "ttl " + ttl);
    }
  }

  @Test
  void retentionUnder30DaysIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new RedisStore(new RespClient(TestSupport.REDIS_URL), "x:", Duration.ofHours(1), Duration.ofSeconds(1)));
  }
}

package dev.payhooks.receiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.payhooks.receiver.stores.MemoryStore;
import dev.payhooks.receiver.stores.WebhookStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Spec 6.2 in order: verify, record the evt_ id, acknowledge at once, then process. */
class HandlerTest {
  private final MemoryStore store = new MemoryStore();
  private final LinkedBlockingQueue<String> processed = new LinkedBlockingQueue<>();
  private WebhookHandler handler;

  @AfterEach
  void close() {
    if (handler != null) handler.close();
  }

  private WebhookHandler.Builder builder() {
    return WebhookHandler.builder(TestSupport.SECRET, store)
        .retryDelays(List.of(Duration.ofMillis(10), Duration.ofMillis(10)))
        .onError((e, info) -> {})
        .onRejected(e -> {})
        .onEvent((event, ctx) -> processed.add(event.id()));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> body(WebhookHandler.Response r) throws Exception {
    return (Map<String, Object>) Json.parse(r.body());
  }

  @Test
  void spec_6_2_2_acknowledgesBeforeTheWorkRuns() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    handler = builder().onEvent((event, ctx) -> {
      release.await();
      processed.add(event.id());
    }).build();
    var event = TestSupport.paymentEvent("acct_1", "payment.succeeded");
    var d = TestSupport.delivery(event);
    var response = handler.handle(d.body(), d.headers());
    assertEquals(200, response.status());
    assertEquals(Map.of("received", true), body(response));
    assertTrue(processed.isEmpty(), "the work must not have run before the answer");
    release.countDown();
    assertEquals(event.get("id"), processed.poll(30, TimeUnit.SECONDS));
  }

  @Test
  void spec_6_2_1_duplicatesAreAcknowledgedAndProcessedOnce() throws Exception {
    handler = builder().build();
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Future<WebhookHandler.Response>> answers = new ArrayList<>();
    for (int i = 0; i < 20; i++) answers.add(pool.submit(() -> handler.handle(d.body(), d.headers())));
    int duplicates = 0;
    for (var f : answers) {
      var r = f.get();
      assertEquals(200, r.status());
      if (Boolean.TRUE.equals(body(r).get("duplicate"))) duplicates++;
    }
    pool.shutdown();
    assertEquals(19, duplicates);
    handler.drain();
    assertEquals(1, processed.size());
  }

  @Test
  void spec_5_1_7_aBadSignatureIs400WithTheReasonAndNotProcessed() throws Exception {
    List<String> rejected = new CopyOnWriteArrayList<>();
    handler = builder().onRejected(e -> rejected.add(e.reason().code())).build();
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"), "whsec_other_secret", java.time.Instant.now().getEpochSecond());
    var response = handler.handle(d.body(), d.headers());
    assertEquals(400, response.status());
    assertEquals("bad_signature", body(response).get("error"));
    assertEquals(List.of("bad_signature"), rejected);
    handler.drain();
    assertTrue(processed.isEmpty());
    assertEquals(0, store.size(), "nothing was recorded");
  }

  @Test
  void spec_6_1_1_typesNotHandledAreAcknowledgedAndIgnored() throws Exception {
    handler = builder().types("payment.succeeded").build();
    for (String type : List.of("payment.created", "payment.something_new")) {
      var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", type));
      var response = handler.handle(d.body(), d.headers());
      assertEquals(200, response.status());
      assertEquals(true, body(response).get("ignored"));
    }
    handler.drain();
    assertTrue(processed.isEmpty());
  }

  @Test
  void aMisspeltTypeIsRefusedAtCreation() {
    var e = assertThrows(IllegalArgumentException.class, () -> builder().types("payment.succeded"));
    assertTrue(e.getMessage().contains("unknown event type"));
  }

  @Test
  void failedWorkIsRetriedThenReleasedSoAReplayIsProcessed() throws Exception {
    List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
    List<Boolean> willRetry = Collections.synchronizedList(new ArrayList<>());
    handler = builder()
        .onError((e, info) -> willRetry.add(info.willRetry()))
        .onEvent((event, ctx) -> {
          attempts.add(ctx.attempt());
          throw new IllegalStateException("boom");
        })
        .build();
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    assertEquals(200, handler.handle(d.body(), d.headers()).status());
    TestSupport.waitUntil("three attempts and the id released", () -> willRetry.size() == 3 && store.size() == 0);
    assertEquals(List.of(1, 2, 3), attempts);
    assertEquals(List.of(true, true, false), willRetry);
    // A replay after the work was given up is processed again, not acknowledged as a duplicate.
    var replay = handler.handle(d.body(), d.headers());
    assertEquals(200, replay.status(), replay.body());
    assertFalse(body(replay).containsKey("duplicate"), replay.body());
    TestSupport.waitUntil("the replay's attempt", () -> attempts.size() >= 4);
  }

  @Test
  void theStoreDownAnswers500SoPayhooksRetries() throws Exception {
    WebhookStore broken = new WebhookStore() {
      public boolean durable() { return false; }
      public Claim claim(Event e, Duration l) throws Exception { throw new java.io.IOException("down"); }
      public void complete(Claim c) {}
      public void retryLater(Claim c, Duration d, Duration l, Throwable e) {}
      public void release(Claim c) {}
    };
    handler = WebhookHandler.builder(TestSupport.SECRET, broken).onError((e, i) -> {}).onEvent((e, c) -> {}).build();
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    var response = handler.handle(d.body(), d.headers());
    assertEquals(500, response.status());
    assertEquals("store_unavailable", body(response).get("error"));
  }

  @Test
  void afterCloseDeliveriesAre503() {
    handler = builder().build();
    handler.close();
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    assertEquals(503, handler.handle(d.body(), d.headers()).status());
  }

  @Test
  void spec_6_2_3_creditOnceInMemoryRunsOnceUnderConcurrency() throws Exception {
    AtomicInteger count = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Future<Boolean>> results = new ArrayList<>();
    for (int i = 0; i < 10; i++) results.add(pool.submit(() -> store.creditOnce("pay_1", tx -> count.incrementAndGet()).credited()));
    int credited = 0;
    for (var r : results) if (r.get()) credited++;
    pool.shutdown();
    assertEquals(1, count.get());
    assertEquals(1, credited);
    assertThrows(IllegalStateException.class, () -> store.creditOnce("pay_2", tx -> { throw new IllegalStateException("no"); }));
    assertTrue(store.creditOnce("pay_2", tx -> "ok").credited());
  }
}

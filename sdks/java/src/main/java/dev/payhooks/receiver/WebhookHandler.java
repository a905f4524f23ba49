package dev.payhooks.receiver;

import dev.payhooks.receiver.stores.WebhookStore;
import dev.payhooks.receiver.stores.WebhookStore.Claim;
import dev.payhooks.receiver.stores.WebhookStore.ClaimedEvent;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The receive pipeline, framework-free: verify, acknowledge and ignore the types you don't handle,
 * insert-or-ignore the evt_ id, answer 200 at once, then run the work on the handler's threads,
 * retried when it throws. Adapters ({@code JdkHttpHandler}, {@code WebhookServlet}) turn {@link
 * #handle} into a route.
 *
 * <pre>{@code
 * PostgresStore store = new PostgresStore(dataSource);
 * WebhookHandler webhooks = WebhookHandler.builder(secret, store)
 *     .types("payment.succeeded")
 *     .onEvent((event, context) -> {
 *       Map<String, Object> payment = event.object();
 *       store.creditOnce((String) payment.get("id"), tx -> insertLedgerRow(tx, payment));
 *     })
 *     .build();
 * }</pre>
 *
 * The work is at-least-once: a retry after a failure, or a takeover after a crash, runs it again.
 * Make its effects idempotent and credit with the store's creditOnce.
 */
public final class WebhookHandler implements AutoCloseable {
  /** The work for one event; {@code context} says which attempt this is. */
  @FunctionalInterface
  public interface EventListener {
    void onEvent(Event event, Context context) throws Exception;
  }

  /** Which attempt at an event's work this is (1 for the first). */
  public record Context(int attempt, int maxAttempts) {}

  /** Where a failure happened: the work, the store, a programming error on receipt, or the poller. */
  public enum Phase {
    PROCESS,
    STORE,
    RECEIVE,
    POLL
  }

  /** A failure reported to onError. */
  public record ErrorInfo(Phase phase, Event event, Integer attempt, boolean willRetry) {}

  /** The answer to send for one delivery. */
  public record Response(int status, Map<String, String> headers, String body) {}

  public static final List<Duration> DEFAULT_RETRY_DELAYS =
      List.of(Duration.ofSeconds(1), Duration.ofSeconds(10), Duration.ofMinutes(1), Duration.ofMinutes(10), Duration.ofHours(1));

  private final List<byte[]> secretKeys;
  private final List<java.security.PublicKey> publicKeys;
  private final WebhookStore store;
  private final EventListener onEvent;
  private final Set<String> types;
  private final BiConsumer<Throwable, ErrorInfo> onError;
  private final Consumer<WebhookVerificationException> onRejected;
  private final Duration tolerance;
  private final List<Duration> delays;
  private final Duration lease;
  private final Supplier<Instant> clock;
  private final boolean durable;
  private final int concurrency;
  private final ExecutorService workers;
  private final ScheduledExecutorService timers;
  private final Map<ScheduledFuture<?>, Claim> retries = new ConcurrentHashMap<>();
  private final Object idle = new Object();
  private int outstanding; // queued or running, under `idle`
  private volatile boolean closed;

  private WebhookHandler(Builder b) {
    // A missing or malformed secret or public key fails here, at start.
    this.publicKeys = Webhook.checkPublicKeys(b.publicKeys);
    this.secretKeys = Webhook.checkSecrets(b.secrets, !publicKeys.isEmpty());
    if (b.store == null) throw new IllegalArgumentException("payhooks: a store is required: MemoryStore, PostgresStore or RedisStore");
    if (b.onEvent == null) throw new IllegalArgumentException("payhooks: onEvent is required");
    if (b.concurrency <= 0) throw new IllegalArgumentException("payhooks: concurrency must be a positive integer");
    for (Duration d : b.delays) if (d.isNegative()) throw new IllegalArgumentException("payhooks: retry delays must be >= 0");
    this.store = b.store;
    this.onEvent = b.onEvent;
    this.types = b.types;
    this.onError = b.onError;
    this.onRejected = b.onRejected;
    this.tolerance = b.tolerance;
    this.delays = List.copyOf(b.delays);
    this.lease = b.lease;
    this.clock = b.clock;
    this.durable = store.durable();
    this.concurrency = b.concurrency;
    this.workers = Executors.newFixedThreadPool(b.concurrency, daemon("payhooks-work"));
    this.timers = Executors.newSingleThreadScheduledExecutor(daemon("payhooks-timers"));
    if (durable) {
      timers.execute(this::poll); // work left behind by a previous process
      timers.scheduleWithFixedDelay(this::poll, b.pollInterval.toMillis(), b.pollInterval.toMillis(), TimeUnit.MILLISECONDS);
    }
    timers.scheduleWithFixedDelay(
        () -> {
          try {
            store.purge();
          } catch (Exception e) {
            report(e, new ErrorInfo(Phase.STORE, null, null, true));
          }
        },
        b.purgeInterval.toMillis(),
        b.purgeInterval.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  public static Builder builder(String secret, WebhookStore store) {
    return new Builder(List.of(secret), store);
  }

  /** Several secrets during a rotation. */
  public static Builder builder(List<String> secrets, WebhookStore store) {
    return new Builder(secrets, store);
  }

  public int maxAttempts() {
    return delays.size() + 1;
  }

  /** Handles one delivery and returns the answer to send. Never throws. */
  public Response handle(byte[] body, Headers headers) {
    if (closed) return answer(503, Map.of("error", "receiver_closed"));
    Event event;
    try {
      event = Webhook.verifyWith(body, headers, secretKeys, publicKeys, tolerance, clock.get());
    } catch (WebhookVerificationException e) {
      // A failed verification is answered 400 and the event is not processed.
      try {
        onRejected.accept(e);
      } catch (RuntimeException ignored) {
        // a hook that throws must not turn the 400 into something else
      }
      Map<String, Object> error = new LinkedHashMap<>();
      error.put("error", e.reason().code());
      error.put("message", e.getMessage());
      return answer(400, error);
    } catch (RuntimeException e) {
      report(e, new ErrorInfo(Phase.RECEIVE, null, null, true));
      return answer(500, Map.of("error", "internal_error"));
    }
    // Acknowledge and ignore the types this receiver does not handle (the catalog grows).
    if (types != null && !types.contains(event.type())) return answer(200, Map.of("received", true, "ignored", true));
    Claim claim;
    try {
      claim = store.claim(event, lease);
    } catch (Exception e) {
      // Not recorded, not acknowledged: payhooks retries the delivery.
      report(e, new ErrorInfo(Phase.STORE, event, null, true));
      return answer(500, Map.of("error", "store_unavailable"));
    }
    if (claim == null) return answer(200, Map.of("received", true, "duplicate", true));
    // Acknowledge now; the work runs on the handler's threads.
    enqueue(event, claim);
    return answer(200, Map.of("received", true));
  }

  /** Blocks until no work is queued or running (scheduled retries excluded). */
  public void drain() throws InterruptedException {
    synchronized (idle) {
      while (outstanding > 0) idle.wait();
    }
  }

  /** Durable stores: claims due retries and abandoned work now and queues it; returns how many. */
  public int poll() {
    if (!durable || closed) return 0;
    try {
      int room;
      synchronized (idle) {
        room = concurrency * 2 - outstanding;
      }
      List<ClaimedEvent> due = store.claimDue(room, lease);
      for (ClaimedEvent c : due) enqueue(c.event(), c.claim());
      return due.size();
    } catch (Exception e) {
      report(e, new ErrorInfo(Phase.POLL, null, null, true));
      return 0;
    }
  }

  /**
   * Stops the timers and waits for running work. Deliveries after this are answered 503. With a
   * non-durable store, events waiting for an in-process retry are released, so a redelivery of them
   * is processed; with a durable one they stay in the table for the next process.
   */
  @Override
  public void close() {
    closed = true;
    timers.shutdownNow();
    for (Map.Entry<ScheduledFuture<?>, Claim> r : retries.entrySet()) {
      try {
        store.release(r.getValue());
      } catch (Exception e) {
        report(e, new ErrorInfo(Phase.STORE, null, null, false));
      }
    }
    retries.clear();
    try {
      drain();
      workers.shutdown();
      workers.awaitTermination(1, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void enqueue(Event event, Claim claim) {
    synchronized (idle) {
      outstanding++;
    }
    workers.execute(
        () -> {
          try {
            attempt(event, claim);
          } finally {
            synchronized (idle) {
              if (--outstanding == 0) idle.notifyAll();
            }
          }
        });
  }

  private void attempt(Event event, Claim claim) {
    try {
      onEvent.onEvent(event, new Context(claim.attempt(), maxAttempts()));
    } catch (Exception | Error e) {
      afterFailure(event, claim, e);
      return;
    }
    try {
      store.complete(claim);
    } catch (Exception e) {
      // Done but not marked: after the lease it may run again (it must be idempotent).
      report(e, new ErrorInfo(Phase.STORE, event, claim.attempt(), durable));
    }
  }

  private void afterFailure(Event event, Claim claim, Throwable error) {
    boolean willRetry = claim.attempt() < maxAttempts();
    report(error, new ErrorInfo(Phase.PROCESS, event, claim.attempt(), willRetry));
    try {
      if (willRetry) {
        Duration delay = delays.get(claim.attempt() - 1);
        store.retryLater(claim, delay, lease, error);
        if (closed) {
          if (!durable) store.release(claim);
        } else if (durable) {
          // The retry lives in the store; any instance's poller picks it up when due.
          timers.schedule(this::poll, delay.toMillis() + 10, TimeUnit.MILLISECONDS);
        } else {
          Claim next = new Claim(claim.eventId(), claim.token(), claim.attempt() + 1);
          ScheduledFuture<?>[] self = new ScheduledFuture<?>[1];
          synchronized (retries) {
            self[0] =
                timers.schedule(
                    () -> {
                      synchronized (retries) {
                        retries.remove(self[0]);
                      }
                      enqueue(event, next);
                    },
                    delay.toMillis(),
                    TimeUnit.MILLISECONDS);
            retries.put(self[0], next);
          }
        }
      } else if (durable) {
        store.markFailed(claim, error);
      } else {
        // Given up: forget the id, so the next delivery of this event (a replay) is processed.
        store.release(claim);
      }
    } catch (Exception e) { // includes a RejectedExecutionException after close
      report(e, new ErrorInfo(Phase.STORE, event, claim.attempt(), durable));
    }
  }

  private void report(Throwable error, ErrorInfo info) {
    try {
      onError.accept(error, info);
    } catch (RuntimeException ignored) {
      // an onError hook that throws must not break the pipeline
    }
  }

  private static Response answer(int status, Map<String, ?> body) {
    return new Response(status, Map.of("Content-Type", "application/json; charset=utf-8"), Json.write(body));
  }

  /** Options of a {@link WebhookHandler}. */
  public static final class Builder {
    private final List<String> secrets;
    private List<String> publicKeys = List.of();
    private final WebhookStore store;
    private EventListener onEvent;
    private Set<String> types;
    private BiConsumer<Throwable, ErrorInfo> onError =
        (e, info) -> {
          String where = info.event() == null ? "" : " for " + info.event().id() + " (" + info.event().type() + "), attempt " + info.attempt();
          System.err.println("[payhooks] " + info.phase().name().toLowerCase() + " error" + where + (info.willRetry() ? ", will retry" : "") + ": " + e);
        };
    private Consumer<WebhookVerificationException> onRejected =
        e ->
            System.err.println(
                "[payhooks] rejected a delivery with 400: " + e.reason().code() + ": " + e.getMessage() + "."
                    + (e.reason() == WebhookVerificationException.Reason.BAD_SIGNATURE
                        ? " If every delivery is rejected, check that the secret is this endpoint's whsec_ signing secret."
                        : ""));
    private Duration tolerance = Webhook.DEFAULT_TOLERANCE;
    private List<Duration> delays = DEFAULT_RETRY_DELAYS;
    private int concurrency = 4;
    private Duration lease = Duration.ofMinutes(5);
    private Duration pollInterval = Duration.ofSeconds(5);
    private Duration purgeInterval = Duration.ofHours(1);
    private Supplier<Instant> clock = Instant::now;

    private Builder(List<String> secrets, WebhookStore store) {
      this.secrets = secrets;
      this.store = store;
    }

    /**
     * The endpoint's ed25519 public keys ({@code whpk_...}) to verify {@code v1a} signatures with:
     * pass {@code List.of()} as the secrets to verify with public keys only. With both, one valid
     * signature of either kind is enough.
     */
    public Builder publicKeys(List<String> value) {
      this.publicKeys = value == null ? List.of() : List.copyOf(value);
      return this;
    }

    public Builder onEvent(EventListener listener) {
      this.onEvent = listener;
      return this;
    }

    /**
     * The event types you handle; others are answered 200 and ignored. A type outside the catalog
     * throws IllegalArgumentException (a typo would acknowledge and drop every payment).
     */
    public Builder types(String... handled) {
      Set<String> set = new HashSet<>();
      for (String t : handled) {
        if (!EventTypes.ALL.contains(t)) {
          throw new IllegalArgumentException("payhooks: unknown event type \"" + t + "\" in types; known types: " + String.join(", ", EventTypes.ALL));
        }
        set.add(t);
      }
      this.types = set;
      return this;
    }

    public Builder onError(BiConsumer<Throwable, ErrorInfo> hook) {
      this.onError = hook;
      return this;
    }

    public Builder onRejected(Consumer<WebhookVerificationException> hook) {
      this.onRejected = hook;
      return this;
    }

    public Builder tolerance(Duration value) {
      this.tolerance = value;
      return this;
    }

    public Builder retryDelays(List<Duration> value) {
      this.delays = new ArrayList<>(value);
      return this;
    }

    public Builder concurrency(int value) {
      this.concurrency = value;
      return this;
    }

    public Builder lease(Duration value) {
      this.lease = value;
      return this;
    }

    public Builder pollInterval(Duration value) {
      this.pollInterval = value;
      return this;
    }

    public Builder purgeInterval(Duration value) {
      this.purgeInterval = value;
      return this;
    }

    public Builder clock(Supplier<Instant> value) {
      this.clock = value;
      return this;
    }

    public WebhookHandler build() {
      return new WebhookHandler(this);
    }
  }
}

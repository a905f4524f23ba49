package dev.payhooks.receiver.stores;

import dev.payhooks.receiver.Event;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.function.LongSupplier;

/**
 * In-memory store: tests, development, a single-process receiver. Lost on exit, not shared between
 * processes. Safe under concurrent duplicates within the process.
 */
public final class MemoryStore implements WebhookStore {
  private record Entry(String token, long expiresAtNanos) {}

  private final Map<String, Entry> events = new HashMap<>();
  private final Map<String, Boolean> credits = new HashMap<>(); // false: running, true: done
  private final Duration retention;
  private final LongSupplier nanos;

  public MemoryStore() {
    this(DEDUP_RETENTION, System::nanoTime);
  }

  public MemoryStore(Duration retention, LongSupplier nanoClock) {
    this.retention = WebhookStore.checkRetention(retention);
    this.nanos = nanoClock;
  }

  @Override
  public boolean durable() {
    return false;
  }

  @Override
  public synchronized Claim claim(Event event, Duration lease) {
    long now = nanos.getAsLong();
    Entry existing = events.get(event.id());
    if (existing != null && existing.expiresAtNanos - now > 0) return null;
    String token = UUID.randomUUID().toString();
    events.put(event.id(), new Entry(token, now + lease.toNanos()));
    return new Claim(event.id(), token, 1);
  }

  @Override
  public synchronized void complete(Claim claim) {
    replaceIfHeld(claim, new Entry(null, nanos.getAsLong() + retention.toNanos()));
  }

  @Override
  public synchronized void retryLater(Claim claim, Duration delay, Duration lease, Throwable error) {
    replaceIfHeld(claim, new Entry(claim.token(), nanos.getAsLong() + delay.toNanos() + lease.toNanos()));
  }

  @Override
  public synchronized void release(Claim claim) {
    Entry e = events.get(claim.eventId());
    if (e != null && claim.token().equals(e.token)) events.remove(claim.eventId());
  }

  @Override
  public synchronized int purge() {
    long now = nanos.getAsLong();
    int before = events.size();
    events.values().removeIf(e -> e.expiresAtNanos - now <= 0);
    return before - events.size();
  }

  public synchronized int size() {
    return events.size();
  }

  private void replaceIfHeld(Claim claim, Entry next) {
    Entry e = events.get(claim.eventId());
    if (e != null && claim.token().equals(e.token)) events.put(claim.eventId(), next);
  }

  /** Runs {@code work} once per payment id; concurrent callers wait for the one running, and if it throws, the next one credits. */
  public <T> CreditResult<T> creditOnce(String paymentId, CreditWork<T, Void> work) throws Exception {
    WebhookStore.checkPaymentId(paymentId);
    synchronized (this) {
      while (true) {
        Boolean state = credits.get(paymentId);
        if (Boolean.TRUE.equals(state)) return CreditResult.notCredited();
        if (state == null) break;
        wait();
      }
      credits.put(paymentId, false);
    }
    T value;
    try {
      value = work.run(null);
    } catch (Exception | Error e) {
      synchronized (this) {
        credits.remove(paymentId);
        notifyAll();
      }
      throw e;
    }
    synchronized (this) {
      credits.put(paymentId, true);
      notifyAll();
    }
    return new CreditResult<>(true, value);
  }
}

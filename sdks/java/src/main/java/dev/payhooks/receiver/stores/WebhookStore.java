package dev.payhooks.receiver.stores;

import dev.payhooks.receiver.Event;
import java.time.Duration;
import java.util.List;

/**
 * Where a receiver records the evt_ ids it has seen, for at least 30 days, and the state of the
 * work for each:
 *
 * <ul>
 *   <li>{@link #claim} is the insert-or-ignore: it records the id and hands out a {@link Claim}, or
 *       returns null when the id was seen (done, being processed under a live lease, or waiting
 *       for a retry). Concurrent identical calls get at most one claim.
 *   <li>{@link #complete} keeps the id as done for the retention period.
 *   <li>{@link #retryLater} keeps the id as seen while the work waits for another attempt.
 *   <li>{@link #release} forgets the id, so the next delivery of the event is processed.
 * </ul>
 *
 * A {@link #durable()} store also keeps the event with its id, in the same write, and hands due
 * work back through {@link #claimDue} (retries, and work whose holder died).
 */
public interface WebhookStore {
  /** Seen ids are kept at least this long. */
  Duration DEDUP_RETENTION = Duration.ofDays(30);

  boolean durable();

  Claim claim(Event event, Duration lease) throws Exception;

  void complete(Claim claim) throws Exception;

  void retryLater(Claim claim, Duration delay, Duration lease, Throwable error) throws Exception;

  void release(Claim claim) throws Exception;

  /** Durable stores: every attempt failed; keep the event as failed (a dead letter). */
  default void markFailed(Claim claim, Throwable error) throws Exception {
    release(claim);
  }

  /** Durable stores: claims work that is due (retries) or abandoned (expired leases). */
  default List<ClaimedEvent> claimDue(int limit, Duration lease) throws Exception {
    return List.of();
  }

  /** Deletes ids past retention; returns how many. */
  default int purge() throws Exception {
    return 0;
  }

  /**
   * The right to process one event, handed to exactly one caller. {@code token} fences a holder
   * whose lease expired: its later writes are ignored.
   */
  record Claim(String eventId, String token, int attempt) {}

  /** A claim with its event, from {@link #claimDue}. */
  record ClaimedEvent(Claim claim, Event event) {}

  static Duration checkRetention(Duration retention) {
    if (retention == null || retention.compareTo(DEDUP_RETENTION) < 0) {
      throw new IllegalArgumentException("payhooks: seen ids must be kept at least 30 days");
    }
    return retention;
  }

  static String checkPaymentId(String paymentId) {
    if (paymentId == null || paymentId.isEmpty()) {
      throw new IllegalArgumentException("payhooks: creditOnce needs the payment id (pay_...)");
    }
    return paymentId;
  }

  static String errorText(Throwable error) {
    if (error == null) return null;
    java.io.StringWriter out = new java.io.StringWriter();
    error.printStackTrace(new java.io.PrintWriter(out));
    String text = out.toString();
    return text.length() > 4000 ? text.substring(0, 4000) : text;
  }
}

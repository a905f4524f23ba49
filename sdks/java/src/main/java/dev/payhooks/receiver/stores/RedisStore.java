package dev.payhooks.receiver.stores;

import dev.payhooks.receiver.Event;
import java.time.Duration;
import java.util.UUID;

/**
 * Redis store: {@code SET key NX PX} is the insert-or-ignore, atomic under concurrent duplicates
 * and across processes. Keys expire by themselves: processing after the lease (so work lost with a
 * dead process is not acknowledged as a duplicate forever), done after the retention. Not durable
 * for the work itself: run Redis with persistence and a non-evicting policy, or seen ids may vanish
 * early.
 *
 * <p>{@link #creditOnce} marks the payment with SET NX (no expiry) before the work and done after
 * it. The marker is not in your ledger's transaction: if the process dies inside the work, the
 * payment stays pending and every later creditOnce for it throws {@link CreditInProgressException}
 * (never a second credit) until you check the ledger and delete or set {@link #creditKey} by hand.
 */
public final class RedisStore implements WebhookStore {
  /** One Redis command, answered as RESP values (String, Long, null, List). Adapt Jedis or Lettuce to it, or use {@link RespClient}. */
  @FunctionalInterface
  public interface Commands {
    Object call(String... args) throws Exception;
  }

  // Compare-and-set on the holder's token, so a holder whose lease expired cannot undo a newer claim.
  private static final String COMPLETE =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end return 0";
  private static final String EXTEND =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
  private static final String DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

  private final Commands redis;
  private final String prefix;
  private final Duration retention;
  private final Duration creditWait;

  public RedisStore(Commands redis) {
    this(redis, "payhooks:", DEDUP_RETENTION, Duration.ofSeconds(10));
  }

  public RedisStore(Commands redis, String prefix, Duration retention, Duration creditWait) {
    this.redis = redis;
    this.prefix = prefix;
    this.retention = WebhookStore.checkRetention(retention);
    this.creditWait = creditWait;
  }

  @Override
  public boolean durable() {
    return false;
  }

  public String eventKey(String eventId) {
    return prefix + "event:" + eventId;
  }

  public String creditKey(String paymentId) {
    return prefix + "credit:" + paymentId;
  }

  private static String holding(Claim claim) {
    return "processing:" + claim.token();
  }

  @Override
  public Claim claim(Event event, Duration lease) throws Exception {
    Claim claim = new Claim(event.id(), UUID.randomUUID().toString(), 1);
    Object ok = redis.call("SET", eventKey(event.id()), holding(claim), "PX", Long.toString(Math.max(1, lease.toMillis())), "NX");
    return "OK".equals(ok) ? claim : null;
  }

  @Override
  public void complete(Claim claim) throws Exception {
    redis.call("EVAL", COMPLETE, "1", eventKey(claim.eventId()), holding(claim), Long.toString(retention.toMillis()));
  }

  @Override
  public void retryLater(Claim claim, Duration delay, Duration lease, Throwable error) throws Exception {
    redis.call("EVAL", EXTEND, "1", eventKey(claim.eventId()), holding(claim), Long.toString(delay.plus(lease).toMillis()));
  }

  @Override
  public void release(Claim claim) throws Exception {
    redis.call("EVAL", DELETE, "1", eventKey(claim.eventId()), holding(claim));
  }

  public <T> CreditResult<T> creditOnce(String paymentId, CreditWork<T, Void> work) throws Exception {
    WebhookStore.checkPaymentId(paymentId);
    String key = creditKey(paymentId);
    long deadline = System.nanoTime() + creditWait.toNanos();
    long pause = 10;
    while (true) {
      String mine = "pending:" + UUID.randomUUID();
      if ("OK".equals(redis.call("SET", key, mine, "NX"))) {
        T value;
        try {
          value = work.run(null);
        } catch (Exception | Error e) {
          redis.call("EVAL", DELETE, "1", key, mine);
          throw e;
        }
        redis.call("SET", key, "done");
        return new CreditResult<>(true, value);
      }
      Object current = redis.call("GET", key);
      if ("done".equals(current)) return CreditResult.notCredited();
      if (current == null) continue;
      // Another caller is crediting this payment: wait for its outcome.
      if (System.nanoTime() - deadline >= 0) throw new CreditInProgressException(paymentId);
      Thread.sleep(pause);
      pause = Math.min(pause * 2, 200);
    }
  }
}

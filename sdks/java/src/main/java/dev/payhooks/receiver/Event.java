package dev.payhooks.receiver;

import java.util.Collections;
import java.util.Map;

/**
 * A verified event: the envelope as parsed JSON ({@link #raw()}), with getters for the fields every
 * event has. For payment.* events {@link #object()} is the Payment (id, status, amount as a decimal
 * string, asset_code, metadata).
 */
public final class Event {
  private final Map<String, Object> raw;

  public Event(Map<String, Object> raw) {
    this.raw = Collections.unmodifiableMap(raw);
  }

  public String id() {
    return (String) raw.get("id");
  }

  public String type() {
    return (String) raw.get("type");
  }

  public Map<String, Object> raw() {
    return raw;
  }

  /** {@code data.object}, or an empty map. */
  @SuppressWarnings("unchecked")
  public Map<String, Object> object() {
    if (raw.get("data") instanceof Map<?, ?> data && data.get("object") instanceof Map<?, ?> object) {
      return Collections.unmodifiableMap((Map<String, Object>) object);
    }
    return Map.of();
  }

  /** True for payment.* events, whose data.object is the Payment. */
  public boolean isPaymentEvent() {
    return type().startsWith("payment.") && "payment".equals(object().get("object"));
  }

  /** The event as JSON (for storing it with its id). */
  public String toJson() {
    return Json.write(raw);
  }

  @Override
  public String toString() {
    return "Event[" + id() + " " + type() + "]";
  }
}

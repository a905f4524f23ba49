package dev.payhooks.receiver;

import java.util.List;

/**
 * The event types payhooks sends. The catalog grows: a receiver acknowledges the types it does not
 * handle and ignores them. (Checked against the contract's list by the tests.)
 */
public final class EventTypes {
  private EventTypes() {}

  public static final List<String> ALL =
      List.of(
          "payment.created",
          "payment.requires_action",
          "payment.under_review",
          "payment.processing",
          "payment.succeeded",
          "payment.failed",
          "payment.cancelled",
          "payment.expired",
          "checkout_session.completed",
          "checkout_session.expired",
          "webhook_endpoint.disabled");
}

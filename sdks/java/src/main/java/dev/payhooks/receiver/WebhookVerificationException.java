package dev.payhooks.receiver;

/**
 * A delivery that must be answered with HTTP 400 and not processed. {@link #reason()} says why:
 *
 * <ul>
 *   <li>{@code missing_header}: Service-Signature or Service-Event-Id is absent or empty;
 *   <li>{@code malformed_header}: Service-Signature is not {@code t=<unix seconds>,v1=<64 lowercase hex>[,v1=...]};
 *   <li>{@code bad_signature}: no v1 matches the HMAC of {@code <t>.<raw body>} under any configured secret;
 *   <li>{@code timestamp_out_of_tolerance}: the signature matched but |now - t| is more than the tolerance;
 *   <li>{@code event_id_mismatch}: Service-Event-Id (not signed) differs from the signed body's id;
 *   <li>{@code invalid_json}: the signed body is not UTF-8 JSON of an object with a string id and type.
 * </ul>
 */
public final class WebhookVerificationException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why a delivery failed verification; {@link #code()} is the wire name. */
  public enum Reason {
    MISSING_HEADER("missing_header"),
    MALFORMED_HEADER("malformed_header"),
    BAD_SIGNATURE("bad_signature"),
    TIMESTAMP_OUT_OF_TOLERANCE("timestamp_out_of_tolerance"),
    EVENT_ID_MISMATCH("event_id_mismatch"),
    INVALID_JSON("invalid_json");

    private final String code;

    Reason(String code) {
      this.code = code;
    }

    public String code() {
      return code;
    }
  }

  private final Reason reason;

  public WebhookVerificationException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }

  /** The HTTP status to answer with. */
  public int status() {
    return 400;
  }
}

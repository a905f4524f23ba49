package dev.payhooks.receiver;

import dev.payhooks.receiver.WebhookVerificationException.Reason;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifying a payhooks delivery. The {@code Service-Signature} header is {@code
 * t=<unix seconds>,v1=<hex>[,v1=<hex>...]}, where v1 is HMAC-SHA256, keyed with the endpoint's
 * whole {@code whsec_} secret, of {@code <t>.<raw body>}. With asymmetric signing on, {@code
 * v1a=<base64>} entries carry ed25519 signatures of the same bytes, verified with the endpoint's
 * {@code whpk_} public key by the JDK's own {@code Signature.getInstance("Ed25519")} (Java 15+).
 *
 * <pre>{@code
 * Event event = Webhook.verify(rawBody, headers, List.of(secret));
 * Event event = Webhook.verify(rawBody, headers, List.of(), List.of(publicKey), Webhook.DEFAULT_TOLERANCE, Instant.now());
 * }</pre>
 */
public final class Webhook {
  public static final String SIGNATURE_HEADER = "Service-Signature";
  public static final String EVENT_ID_HEADER = "Service-Event-Id";
  public static final String SECRET_PREFIX = Formats.SECRET_PREFIX;
  /** An endpoint's ed25519 public key: {@code whpk_} + base64 of its 32 bytes. */
  public static final String PUBLIC_KEY_PREFIX = Formats.PUBLIC_KEY_PREFIX;
  /** |now - t| allowed, in either direction. */
  public static final Duration DEFAULT_TOLERANCE = Duration.ofSeconds(300);

  // What verification accepts, generated from the contract (Formats.java).
  private static final Pattern TIMESTAMP = Formats.TIMESTAMP;
  private static final Pattern V1 = Formats.V1;
  private static final Pattern SCHEME = Formats.SCHEME;
  private static final Pattern V1A = Formats.V1A;
  private static final Pattern PUBLIC_KEY = Formats.PUBLIC_KEY;
  /** The DER SubjectPublicKeyInfo prefix of an ed25519 key (RFC 8410): the 32 raw bytes follow. */
  private static final byte[] ED25519_SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");

  private Webhook() {}

  /** Verifies with the default tolerance and the system clock. */
  public static Event verify(byte[] body, Headers headers, List<String> secrets) throws WebhookVerificationException {
    return verify(body, headers, secrets, DEFAULT_TOLERANCE, Instant.now());
  }

  /**
   * Verifies a delivery and returns the event. Throws {@link WebhookVerificationException} (answer
   * 400, don't process) or {@link IllegalArgumentException} for a programming error (no secret, a
   * secret without {@code whsec_}).
   *
   * @param body the raw request body exactly as received, never re-serialised JSON
   * @param headers the request headers (names case-insensitive)
   * @param secrets the endpoint's whsec_ secret, or several during a rotation
   */
  public static Event verify(byte[] body, Headers headers, List<String> secrets, Duration tolerance, Instant now)
      throws WebhookVerificationException {
    return verify(body, headers, secrets, List.of(), tolerance, now);
  }

  /**
   * Verifies with secrets and/or the endpoint's ed25519 public keys ({@code whpk_...}, several
   * during a key rotation): one valid signature of either kind is enough. {@code secrets} may be
   * empty when public keys are given.
   */
  public static Event verify(byte[] body, Headers headers, List<String> secrets, List<String> publicKeys, Duration tolerance, Instant now)
      throws WebhookVerificationException {
    List<PublicKey> keys = checkPublicKeys(publicKeys);
    return verifyWith(body, headers, checkSecrets(secrets, !keys.isEmpty()), keys, tolerance, now);
  }

  static Event verifyWith(byte[] body, Headers headers, List<byte[]> keys, List<PublicKey> publicKeys, Duration tolerance, Instant now)
      throws WebhookVerificationException {
    if (body == null) throw new IllegalArgumentException("payhooks: body is required: the raw request bytes");
    if (tolerance == null || tolerance.isNegative()) throw new IllegalArgumentException("payhooks: tolerance must be >= 0");
    String signature = header(headers, SIGNATURE_HEADER);
    String eventId = header(headers, EVENT_ID_HEADER);
    Parsed parsed = parse(signature);

    // Compare every v1 with every secret's HMAC, without stopping at the first match, so the time
    // taken does not say which one matched.
    boolean matched = false;
    for (byte[] key : keys) {
      byte[] expected = hex(hmac(key, parsed.timestamp, body)).getBytes(StandardCharsets.US_ASCII);
      for (String received : parsed.signatures) {
        if (MessageDigest.isEqual(expected, received.getBytes(StandardCharsets.US_ASCII))) matched = true;
      }
    }
    if (!publicKeys.isEmpty() && !parsed.asymmetric.isEmpty()) {
      // ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
      byte[] prefix = (parsed.timestamp + ".").getBytes(StandardCharsets.US_ASCII);
      for (PublicKey key : publicKeys) {
        for (byte[] candidate : parsed.asymmetric) {
          if (ed25519Verifies(key, prefix, body, candidate)) matched = true;
        }
      }
    }
    if (!matched) {
      throw new WebhookVerificationException(
          Reason.BAD_SIGNATURE, "no signature in the header verifies the raw body under the configured secret(s) or public key(s)");
    }
    // Compared in milliseconds: 300.001 s is outside a 300 s tolerance.
    long offsetMs = now.toEpochMilli() - parsed.timestamp * 1000;
    if (Math.abs(offsetMs) > tolerance.toMillis()) {
      throw new WebhookVerificationException(
          Reason.TIMESTAMP_OUT_OF_TOLERANCE,
          "signature timestamp " + parsed.timestamp + " is " + BigDecimal.valueOf(offsetMs, 3) + " s from now; the tolerance is "
              + tolerance.toSeconds() + " s");
    }
    return parseEvent(body, eventId);
  }

  /** The Service-Signature header for {@code body} signed with each secret at {@code timestamp} (tests). */
  public static String sign(byte[] body, List<String> secrets, long timestamp) {
    StringBuilder header = new StringBuilder("t=").append(timestamp);
    for (byte[] key : checkSecrets(secrets)) header.append(",v1=").append(hex(hmac(key, timestamp, body)));
    return header.toString();
  }

  static List<byte[]> checkSecrets(List<String> secrets) {
    return checkSecrets(secrets, false);
  }

  static List<byte[]> checkSecrets(List<String> secrets, boolean havePublicKeys) {
    if ((secrets == null || secrets.isEmpty()) && havePublicKeys) return List.of();
    if (secrets == null || secrets.isEmpty()) {
      throw new IllegalArgumentException(
          "payhooks: a secret is required: the endpoint's whsec_ signing secret (or public keys, its whpk_ public keys)");
    }
    List<byte[]> keys = new ArrayList<>();
    for (String s : secrets) {
      if (s == null || !s.startsWith(SECRET_PREFIX) || s.length() <= SECRET_PREFIX.length()) {
        throw new IllegalArgumentException(
            "payhooks: the secret must be the endpoint's signing secret, which starts with \"whsec_\"; it is used whole, prefix included, as the HMAC key");
      }
      keys.add(s.getBytes(StandardCharsets.UTF_8));
    }
    return keys;
  }

  /** The {@code whpk_} keys as JDK public keys; an IllegalArgumentException (that does not echo the key) otherwise. */
  static List<PublicKey> checkPublicKeys(List<String> publicKeys) {
    List<PublicKey> keys = new ArrayList<>();
    if (publicKeys == null) return keys;
    for (String k : publicKeys) {
      String body = k != null && k.startsWith(PUBLIC_KEY_PREFIX) ? k.substring(PUBLIC_KEY_PREFIX.length()) : "";
      if (!PUBLIC_KEY.matcher(body).matches()) {
        throw new IllegalArgumentException(
            "payhooks: each public key must be one of the endpoint's public keys: \"whpk_\" followed by the base64 of its 32 bytes");
      }
      byte[] raw = Base64.getDecoder().decode(body);
      byte[] spki = new byte[ED25519_SPKI_PREFIX.length + raw.length];
      System.arraycopy(ED25519_SPKI_PREFIX, 0, spki, 0, ED25519_SPKI_PREFIX.length);
      System.arraycopy(raw, 0, spki, ED25519_SPKI_PREFIX.length, raw.length);
      try {
        keys.add(KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki)));
      } catch (GeneralSecurityException e) {
        throw new IllegalArgumentException("payhooks: a public key is not a valid ed25519 key");
      }
    }
    return keys;
  }

  private static boolean ed25519Verifies(PublicKey key, byte[] prefix, byte[] body, byte[] signature) {
    try {
      Signature verifier = Signature.getInstance("Ed25519");
      verifier.initVerify(key);
      verifier.update(prefix);
      verifier.update(body);
      return verifier.verify(signature);
    } catch (java.security.SignatureException e) {
      return false;
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      throw new IllegalStateException("Ed25519 is not available", e);
    }
  }

  private static byte[] hmac(byte[] key, long timestamp, byte[] body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update((timestamp + ".").getBytes(StandardCharsets.US_ASCII));
      return mac.doFinal(body);
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  private static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  private static String header(Headers headers, String name) throws WebhookVerificationException {
    if (headers == null) throw new IllegalArgumentException("payhooks: headers are required (the request headers)");
    List<String> values = headers.all(name);
    if (values.size() > 1) throw new WebhookVerificationException(Reason.MALFORMED_HEADER, name + " header sent more than once");
    if (values.isEmpty() || values.get(0) == null || values.get(0).isEmpty()) {
      throw new WebhookVerificationException(Reason.MISSING_HEADER, "missing " + name + " header");
    }
    return values.get(0);
  }

  private record Parsed(long timestamp, List<String> signatures, List<byte[]> asymmetric) {}

  /** Strict parse of t=&lt;int&gt;,v1=&lt;hex&gt;[,v1=...][,v1a=&lt;base64&gt;...]; unknown schemes (v2=...) are skipped. */
  private static Parsed parse(String header) throws WebhookVerificationException {
    Long timestamp = null;
    List<String> signatures = new ArrayList<>();
    List<byte[]> asymmetric = new ArrayList<>();
    for (String part : header.split(",", -1)) {
      int eq = part.indexOf('=');
      if (eq <= 0) throw malformed();
      String key = part.substring(0, eq);
      String value = part.substring(eq + 1);
      if (key.equals("t")) {
        if (timestamp != null || !TIMESTAMP.matcher(value).matches()) throw malformed();
        timestamp = Long.parseLong(value);
      } else if (key.equals("v1")) {
        if (!V1.matcher(value).matches()) throw malformed();
        signatures.add(value);
      } else if (key.equals("v1a")) {
        if (!V1A.matcher(value).matches()) throw malformed();
        asymmetric.add(Base64.getDecoder().decode(value));
      } else if (!SCHEME.matcher(key).matches()) {
        throw malformed();
      }
    }
    if (timestamp == null || (signatures.isEmpty() && asymmetric.isEmpty())) throw malformed();
    return new Parsed(timestamp, signatures, asymmetric);
  }

  private static WebhookVerificationException malformed() {
    return new WebhookVerificationException(
        Reason.MALFORMED_HEADER, SIGNATURE_HEADER + " must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces");
  }

  /** After the signature matched: parse the trusted bytes and bind the unsigned id header to the body's id. */
  @SuppressWarnings("unchecked")
  private static Event parseEvent(byte[] body, String eventId) throws WebhookVerificationException {
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(body))
          .toString();
    } catch (CharacterCodingException e) {
      throw new WebhookVerificationException(Reason.INVALID_JSON, "the signed body is not UTF-8 JSON");
    }
    Object parsed;
    try {
      parsed = Json.parse(text);
    } catch (Json.ParseException e) {
      throw new WebhookVerificationException(Reason.INVALID_JSON, "the signed body is not UTF-8 JSON");
    }
    if (!(parsed instanceof Map<?, ?> map) || !(map.get("id") instanceof String) || !(map.get("type") instanceof String)) {
      throw new WebhookVerificationException(Reason.INVALID_JSON, "the signed body is not an event object with a string id and type");
    }
    Event event = new Event((Map<String, Object>) map);
    if (!event.id().equals(eventId)) {
      throw new WebhookVerificationException(Reason.EVENT_ID_MISMATCH, EVENT_ID_HEADER + " does not match the id of the signed body");
    }
    return event;
  }
}

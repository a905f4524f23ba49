package dev.payhooks.receiver;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;

final class TestSupport {
  static final String SECRET = "whsec_test_" + UUID.randomUUID().toString().replace("-", "");
  static final String PG_ADMIN = System.getenv().getOrDefault("PAYHOOKS_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres");
  static final String REDIS_URL = System.getenv().getOrDefault("PAYHOOKS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0");

  private TestSupport() {}

  /** The shared vectors, from the repository (run from sdks/java). */
  @SuppressWarnings("unchecked")
  static Map<String, Object> vectors() throws Exception {
    Path file = Path.of(System.getProperty("payhooks.vectors", "../../packages/contract/test-vectors/webhook-signatures.json"));
    return (Map<String, Object>) Json.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  static Map<String, Object> paymentEvent(String account, String type) {
    Map<String, Object> payment = new LinkedHashMap<>();
    payment.put("id", "pay_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16));
    payment.put("object", "payment");
    payment.put("status", "succeeded");
    payment.put("amount", "10.00");
    payment.put("asset_code", "USDC.ETH");
    payment.put("metadata", Map.of("account", account, "note", "café ✓"));
    Map<String, Object> event = new LinkedHashMap<>();
    event.put("id", "evt_" + UUID.randomUUID().toString().replace("-", ""));
    event.put("object", "event");
    event.put("type", type);
    event.put("api_version", "v1");
    event.put("environment", "test");
    event.put("merchant_id", "mch_test");
    event.put("created_at", "2026-01-01T00:00:00Z");
    event.put("data", Map.of("object", payment));
    return event;
  }

  record Delivery(byte[] body, Headers headers, Map<String, String> headerMap) {}

  static Delivery delivery(Map<String, Object> event, String secret, long timestamp) {
    byte[] body = Json.write(event).getBytes(StandardCharsets.UTF_8);
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "application/json");
    headers.put("Service-Event-Id", (String) event.get("id"));
    headers.put("Service-Signature", Webhook.sign(body, List.of(secret), timestamp));
    return new Delivery(body, Headers.of(headers), headers);
  }

  static Delivery delivery(Map<String, Object> event) {
    return delivery(event, SECRET, Instant.now().getEpochSecond());
  }

  /** Polls until the condition holds (never a fixed sleep as the assertion). */
  static void waitUntil(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) throw new AssertionError("timed out waiting for " + what);
      Thread.sleep(20);
    }
  }

  /** A fresh PostgreSQL database; returns its JDBC URL. Dropped at JVM exit. */
  static String createDatabase() throws Exception {
    String name = "payhooks_java_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection c = DriverManager.getConnection(PG_ADMIN)) {
      c.createStatement().execute("CREATE DATABASE " + name);
    }
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try (Connection c = DriverManager.getConnection(PG_ADMIN)) {
                    c.createStatement().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
                  } catch (Exception ignored) {
                    // best effort
                  }
                }));
    return PG_ADMIN.replace("/postgres?", "/" + name + "?");
  }
}

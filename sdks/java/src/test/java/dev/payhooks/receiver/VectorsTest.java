package dev.payhooks.receiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Spec 5.1: every library runs the shared signature vectors made by the contract package. */
class VectorsTest {
  @TestFactory
  @SuppressWarnings("unchecked")
  List<DynamicTest> sharedSignatureVectors() throws Exception {
    List<DynamicTest> tests = new ArrayList<>();
    for (Object item : (List<Object>) TestSupport.vectors().get("vectors")) {
      Map<String, Object> v = (Map<String, Object>) item;
      tests.add(
          DynamicTest.dynamicTest(
              "vector " + v.get("name"),
              () -> {
                byte[] body = Base64.getDecoder().decode((String) v.get("body_base64"));
                Headers headers = Headers.of((Map<String, String>) (Map<?, ?>) v.get("headers"));
                List<String> secrets = (List<String>) (List<?>) v.get("secrets");
                List<String> publicKeys = (List<String>) (List<?>) v.get("public_keys");
                Duration tolerance = Duration.ofSeconds(((Number) v.get("tolerance_seconds")).longValue());
                Instant now = Instant.ofEpochMilli(((Number) v.get("now_ms")).longValue());
                Map<String, Object> outcome = new LinkedHashMap<>();
                try {
                  Event event = Webhook.verify(body, headers, secrets, publicKeys, tolerance, now);
                  outcome.put("ok", true);
                  outcome.put("event_id", event.id());
                  outcome.put("event_type", event.type());
                } catch (WebhookVerificationException e) {
                  assertEquals(400, e.status());
                  outcome.put("ok", false);
                  outcome.put("reason", e.reason().code());
                } catch (IllegalArgumentException e) {
                  // A key that is not a whpk_ key is refused without being echoed.
                  org.junit.jupiter.api.Assertions.assertFalse(e.getMessage().contains(publicKeys.get(0).substring(5)));
                  outcome.put("ok", false);
                  outcome.put("reason", "configuration_error");
                }
                assertEquals(v.get("expected"), outcome, (String) v.get("description"));
              }));
    }
    return tests;
  }

  @Test
  @SuppressWarnings("unchecked")
  void aHandlerWithOnlyPublicKeysAnswersByTheVectors() throws Exception {
    Map<String, Integer> want = new LinkedHashMap<>(Map.of("v1a_valid_public_key_only", 200, "v1a_wrong_key", 400, "v1a_tampered_body", 400));
    for (Object item : (List<Object>) TestSupport.vectors().get("vectors")) {
      Map<String, Object> v = (Map<String, Object>) item;
      Integer status = want.remove((String) v.get("name"));
      if (status == null) continue;
      Instant now = Instant.ofEpochMilli(((Number) v.get("now_ms")).longValue());
      WebhookHandler handler =
          WebhookHandler.builder(List.of(), new dev.payhooks.receiver.stores.MemoryStore())
              .publicKeys((List<String>) (List<?>) v.get("public_keys"))
              .onEvent((event, context) -> {})
              .onRejected(e -> {})
              .clock(() -> now)
              .build();
      try {
        byte[] body = Base64.getDecoder().decode((String) v.get("body_base64"));
        assertEquals(status, handler.handle(body, Headers.of((Map<String, String>) (Map<?, ?>) v.get("headers"))).status(), (String) v.get("name"));
      } finally {
        handler.close();
      }
    }
    assertEquals(Map.of(), want);
  }

  @Test
  void theLibraryKnowsTheContractsEventTypes() throws Exception {
    assertEquals(TestSupport.vectors().get("event_types"), EventTypes.ALL);
  }

  @Test
  void aRepeatedSignatureHeaderIsMalformed() {
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    Headers twice = name -> name.equalsIgnoreCase("Service-Signature") ? List.of(d.headerMap().get("Service-Signature"), d.headerMap().get("Service-Signature")) : d.headers().all(name);
    var e = assertThrows(WebhookVerificationException.class, () -> Webhook.verify(d.body(), twice, List.of(TestSupport.SECRET)));
    assertEquals("malformed_header", e.reason().code());
  }

  @Test
  void programmingErrorsAreIllegalArguments() {
    var d = TestSupport.delivery(TestSupport.paymentEvent("acct_1", "payment.succeeded"));
    assertThrows(IllegalArgumentException.class, () -> Webhook.verify(d.body(), d.headers(), List.of("not-a-secret")));
    assertThrows(IllegalArgumentException.class, () -> Webhook.verify(d.body(), d.headers(), List.of()));
    assertThrows(IllegalArgumentException.class, () -> Webhook.verify(null, d.headers(), List.of(TestSupport.SECRET)));
  }

  @Test
  void jsonReadsWhatItWritesAndRefusesWhatIsNotJson() throws Exception {
    Map<String, Object> event = TestSupport.paymentEvent("acct_ü", "payment.succeeded");
    assertEquals(event, Json.parse(Json.write(event)));
    for (String bad : List.of("", "{", "[1,]", "{\"a\":1,}", "01", "1.", "\"\\x\"", "tru", "{} x", "\"a\u0001\"")) {
      assertThrows(Json.ParseException.class, () -> Json.parse(bad), bad);
    }
    assertEquals(new java.math.BigDecimal("25.50"), Json.parse("25.50"));
  }
}

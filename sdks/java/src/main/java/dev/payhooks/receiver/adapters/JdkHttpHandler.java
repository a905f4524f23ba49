package dev.payhooks.receiver.adapters;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.payhooks.receiver.Headers;
import dev.payhooks.receiver.WebhookHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The JDK's own HTTP server ({@code com.sun.net.httpserver}): {@code
 * server.createContext("/webhooks/payhooks", new JdkHttpHandler(webhooks))}. Reads the raw body,
 * up to {@code maxBodyBytes} (1 MiB by default; more is 413).
 */
public final class JdkHttpHandler implements HttpHandler {
  private final WebhookHandler webhooks;
  private final int maxBodyBytes;

  public JdkHttpHandler(WebhookHandler webhooks) {
    this(webhooks, 1 << 20);
  }

  public JdkHttpHandler(WebhookHandler webhooks, int maxBodyBytes) {
    this.webhooks = webhooks;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!"POST".equals(exchange.getRequestMethod())) {
        exchange.getResponseHeaders().set("Allow", "POST");
        send(exchange, 405, Map.of("Content-Type", "application/json"), "{\"error\":\"method_not_allowed\"}");
        return;
      }
      byte[] body;
      try (InputStream in = exchange.getRequestBody()) {
        body = in.readNBytes(maxBodyBytes + 1);
      }
      if (body.length > maxBodyBytes) {
        send(exchange, 413, Map.of("Content-Type", "application/json"), "{\"error\":\"body_too_large\"}");
        return;
      }
      WebhookHandler.Response response = webhooks.handle(body, Headers.ofMultimap(exchange.getRequestHeaders()));
      send(exchange, response.status(), response.headers(), response.body());
    }
  }

  private static void send(HttpExchange exchange, int status, Map<String, String> headers, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    headers.forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }
}

package dev.payhooks.receiver.adapters;

import dev.payhooks.receiver.WebhookHandler;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Collections;

/**
 * A Jakarta Servlet (Servlet 5+: Tomcat 10, Jetty 11, Spring Boot 3): register it at your webhook
 * path. It reads the raw bytes from the request's input stream, never parameters, so register it
 * where no filter consumes the body first.
 */
public class WebhookServlet extends HttpServlet {
  private static final long serialVersionUID = 1L;
  private final transient WebhookHandler webhooks;
  private final int maxBodyBytes;

  public WebhookServlet(WebhookHandler webhooks) {
    this(webhooks, 1 << 20);
  }

  public WebhookServlet(WebhookHandler webhooks, int maxBodyBytes) {
    this.webhooks = webhooks;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
    byte[] body;
    try (InputStream in = request.getInputStream()) {
      body = in.readNBytes(maxBodyBytes + 1);
    }
    if (body.length > maxBodyBytes) {
      write(response, 413, "application/json", "{\"error\":\"body_too_large\"}");
      return;
    }
    WebhookHandler.Response answer = webhooks.handle(body, name -> Collections.list(request.getHeaders(name)));
    answer.headers().forEach(response::setHeader);
    write(response, answer.status(), answer.headers().get("Content-Type"), answer.body());
  }

  private static void write(HttpServletResponse response, int status, String contentType, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    response.setStatus(status);
    response.setContentType(contentType);
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }
}

package dev.payhooks.receiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.payhooks.receiver.adapters.JdkHttpHandler;
import dev.payhooks.receiver.adapters.WebhookServlet;
import dev.payhooks.receiver.stores.MemoryStore;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The adapters read the raw bytes (spec 5.1.4) in real servers: the JDK's HttpServer and an embedded Tomcat. */
class AdaptersTest {
  private final LinkedBlockingQueue<String> seen = new LinkedBlockingQueue<>();
  private WebhookHandler webhooks;
  private final HttpClient client = HttpClient.newHttpClient();

  @org.junit.jupiter.api.BeforeAll
  static void quietTomcat() {
    java.util.logging.Logger.getLogger("org.apache").setLevel(java.util.logging.Level.SEVERE);
  }

  @BeforeEach
  void handler() {
    webhooks = WebhookHandler.builder(TestSupport.SECRET, new MemoryStore()).onRejected(e -> {}).onEvent((e, c) -> seen.add(e.id())).build();
  }

  @AfterEach
  void close() {
    webhooks.close();
  }

  private HttpResponse<String> post(String url, TestSupport.Delivery d, byte[] body) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofByteArray(body));
    d.headerMap().forEach(request::header);
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private void deliverTo(String url) throws Exception {
    Map<String, Object> event = TestSupport.paymentEvent("acct_ü", "payment.succeeded");
    var d = TestSupport.delivery(event);
    HttpResponse<String> ok = post(url, d, d.body());
    assertEquals(200, ok.statusCode(), ok.body());
    assertEquals("{\"received\":true}", ok.body());
    assertEquals(event.get("id"), seen.poll(30, TimeUnit.SECONDS));
    HttpResponse<String> again = post(url, d, d.body());
    assertTrue(again.body().contains("\"duplicate\":true"));
    byte[] tampered = new String(d.body(), java.nio.charset.StandardCharsets.UTF_8).replace("10.00", "99.00").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    HttpResponse<String> bad = post(url, d, tampered);
    assertEquals(400, bad.statusCode());
    assertTrue(bad.body().contains("\"error\":\"bad_signature\""));
  }

  @Test
  void spec_5_1_4_jdkHttpServer() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/webhooks/payhooks", new JdkHttpHandler(webhooks));
    server.start();
    try {
      deliverTo("http://127.0.0.1:" + server.getAddress().getPort() + "/webhooks/payhooks");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void spec_5_1_4_servletInEmbeddedTomcat() throws Exception {
    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(Files.createTempDirectory("payhooks-tomcat").toString());
    tomcat.setPort(0);
    tomcat.getConnector();
    Context context = tomcat.addContext("", null);
    Tomcat.addServlet(context, "payhooks", new WebhookServlet(webhooks));
    context.addServletMappingDecoded("/webhooks/payhooks", "payhooks");
    tomcat.start();
    try {
      deliverTo("http://127.0.0.1:" + tomcat.getConnector().getLocalPort() + "/webhooks/payhooks");
    } finally {
      tomcat.stop();
      tomcat.destroy();
    }
  }
}

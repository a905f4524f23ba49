import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.payhooks.receiver.Json;
import dev.payhooks.receiver.WebhookHandler;
import dev.payhooks.receiver.adapters.JdkHttpHandler;
import dev.payhooks.receiver.stores.PostgresStore;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;

/**
 * The smallest real payhooks receiver in Java: the JDK's HTTP server, the payhooks library with its
 * PostgreSQL store, creditOnce into a ledger table. Run it with ./start (PORT, DATABASE_URL,
 * PAYHOOKS_WEBHOOK_SECRET).
 */
public final class ReceiverApp {
  static final String DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/receiver_java";

  public static void main(String[] args) throws Exception {
    List<String> secrets =
        Arrays.stream(System.getenv().getOrDefault("PAYHOOKS_WEBHOOK_SECRET", "").split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    if (secrets.isEmpty()) {
      System.err.println("Set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_ signing secret (comma-separated during a rotation).");
      System.exit(1);
    }
    String databaseUrl = System.getenv().getOrDefault("DATABASE_URL", DEFAULT_DATABASE_URL);
    String jdbcUrl;
    try {
      jdbcUrl = jdbcUrl(databaseUrl);
      createDatabaseIfMissing(databaseUrl);
      try (Connection c = DriverManager.getConnection(jdbcUrl); Statement s = c.createStatement()) {
        s.execute("SET client_min_messages = warning");
        s.execute(
            """
            CREATE TABLE IF NOT EXISTS ledger_entries (
              id          bigserial PRIMARY KEY,
              account     text NOT NULL,
              amount      numeric(20, 2) NOT NULL,
              asset_code  text NOT NULL,
              payment_id  text NOT NULL,
              created_at  timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS ledger_entries_account_idx ON ledger_entries (account);
            """);
      }
    } catch (SQLException | IllegalArgumentException e) {
      System.err.println(
          "The receiver could not open its database: " + e.getMessage() + ". Check that PostgreSQL runs and DATABASE_URL (default "
              + DEFAULT_DATABASE_URL + ") is right.");
      System.exit(1);
      return;
    }

    PostgresStore store = PostgresStore.forUrl(jdbcUrl); // payhooks_events and payhooks_credits, created on first use
    WebhookHandler webhooks =
        WebhookHandler.builder(secrets, store)
            .types("payment.succeeded") // every other type: 200 and ignored
            .onEvent(
                (event, context) -> {
                  if (event.isPaymentEvent() && "succeeded".equals(event.object().get("status"))) credit(store, event.object());
                })
            .build();

    int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "4242"));
    HttpServer server = HttpServer.create(new InetSocketAddress(System.getenv().getOrDefault("HOST", "0.0.0.0"), port), 64);
    server.setExecutor(Executors.newFixedThreadPool(8));
    // The adapter reads the raw bytes: the signature covers them.
    server.createContext("/webhooks/payhooks", new JdkHttpHandler(webhooks));
    server.createContext("/accounts/", exchange -> balance(exchange, store));
    // Where the checkout sends the customer back. It never credits: the redirect may be forged,
    // may come before the webhook, or never come.
    server.createContext("/checkout/return", exchange -> send(exchange, 200, "text/plain; charset=utf-8", "Thanks! Your payment is being confirmed."));
    server.start();
    System.out.println("receiver listening on http://localhost:" + port + "/webhooks/payhooks");

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.stop(1);
                  webhooks.close(); // running work finishes; queued retries stay in PostgreSQL
                  stopped.countDown();
                }));
    stopped.await();
  }

  /** Credits a succeeded payment exactly once, whoever asks: the webhook, a replay, a status poll. */
  static void credit(PostgresStore store, Map<String, Object> payment) throws Exception {
    Map<?, ?> metadata = payment.get("metadata") instanceof Map<?, ?> m ? m : Map.of();
    // `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
    if (Boolean.TRUE.equals(metadata.get("payhooks_check"))) {
      System.out.println("[receiver] " + payment.get("id") + " is a payhooks check-receiver test payment; nothing to credit");
      return;
    }
    Object account = metadata.get("account");
    // Retried, then kept as a failed row in payhooks_events for a human to look at.
    if (!(account instanceof String)) throw new IllegalStateException("payment " + payment.get("id") + " has no metadata.account");
    store.creditOnce(
        (String) payment.get("id"),
        tx -> {
          try (PreparedStatement ps =
              tx.prepareStatement("INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES (?, ?::numeric, ?, ?)")) {
            ps.setString(1, (String) account);
            ps.setString(2, (String) payment.get("amount"));
            ps.setString(3, (String) payment.get("asset_code"));
            ps.setString(4, (String) payment.get("id"));
            return ps.executeUpdate();
          }
        });
  }

  /** GET /accounts/:account/balance: one entry per asset, amounts with two decimals. */
  static void balance(HttpExchange exchange, PostgresStore store) throws IOException {
    String[] parts = exchange.getRequestURI().getRawPath().split("/");
    if (!"GET".equals(exchange.getRequestMethod()) || parts.length != 4 || !"balance".equals(parts[3])) {
      send(exchange, 404, "application/json", "{\"error\":\"not_found\"}");
      return;
    }
    String account = URLDecoder.decode(parts[2], StandardCharsets.UTF_8);
    try {
      List<Map<String, Object>> balances =
          store.withConnection(
              c -> {
                List<Map<String, Object>> rows = new ArrayList<>();
                try (PreparedStatement ps =
                    c.prepareStatement(
                        "SELECT asset_code, sum(amount)::text FROM ledger_entries WHERE account = ? GROUP BY asset_code ORDER BY asset_code")) {
                  ps.setString(1, account);
                  try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                      Map<String, Object> row = new LinkedHashMap<>();
                      row.put("asset_code", rs.getString(1));
                      row.put("balance", rs.getString(2));
                      rows.add(row);
                    }
                  }
                }
                return rows;
              });
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("account", account);
      body.put("balances", balances);
      send(exchange, 200, "application/json", Json.write(body));
    } catch (Exception e) {
      send(exchange, 500, "application/json", "{\"error\":\"database_unavailable\"}");
    }
  }

  static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
    try (exchange) {
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", contentType);
      exchange.sendResponseHeaders(status, bytes.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  /** postgres://user:password@host:port/db?sslmode=... as a pgJDBC URL. */
  static String jdbcUrl(String url) {
    URI uri = URI.create(url);
    if (!"postgres".equals(uri.getScheme()) && !"postgresql".equals(uri.getScheme())) {
      throw new IllegalArgumentException("DATABASE_URL must be a postgres:// URL");
    }
    StringBuilder jdbc = new StringBuilder("jdbc:postgresql://").append(uri.getHost()).append(':').append(uri.getPort() < 0 ? 5432 : uri.getPort());
    jdbc.append(uri.getRawPath());
    List<String> params = new ArrayList<>();
    if (uri.getUserInfo() != null) {
      String[] user = uri.getUserInfo().split(":", 2);
      params.add("user=" + URLEncoder.encode(user[0], StandardCharsets.UTF_8));
      if (user.length == 2) params.add("password=" + URLEncoder.encode(user[1], StandardCharsets.UTF_8));
    }
    if (uri.getRawQuery() != null) params.add(uri.getRawQuery());
    if (!params.isEmpty()) jdbc.append('?').append(String.join("&", params));
    return jdbc.toString();
  }

  /** Creates the database named in the URL when it does not exist yet, as createdb would. */
  static void createDatabaseIfMissing(String url) throws SQLException {
    try (Connection ignored = DriverManager.getConnection(jdbcUrl(url))) {
      return;
    } catch (SQLException e) {
      if (!"3D000".equals(e.getSQLState())) throw e;
    }
    URI uri = URI.create(url);
    String name = URLDecoder.decode(uri.getRawPath().substring(1), StandardCharsets.UTF_8);
    String maintenance = url.replaceFirst("/[^/?]*(\\?|$)", "/postgres$1");
    try (Connection c = DriverManager.getConnection(jdbcUrl(maintenance)); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE \"" + name.replace("\"", "\"\"") + "\"");
      System.out.println("created database " + name);
    } catch (SQLException e) {
      if (!"42P04".equals(e.getSQLState())) throw e; // another process created it first
    }
  }
}

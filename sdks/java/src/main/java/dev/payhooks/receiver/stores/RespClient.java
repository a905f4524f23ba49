package dev.payhooks.receiver.stores;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal Redis client (RESP2 over one socket, commands serialised): just what {@link RedisStore}
 * needs (SET, GET, EVAL, PTTL, AUTH, SELECT). Written here because no Redis client for Java is
 * packaged where payhooks is built; in your application pass any client through {@link
 * RedisStore.Commands} instead (Jedis, Lettuce).
 */
public final class RespClient implements RedisStore.Commands, AutoCloseable {
  private final String host;
  private final int port;
  private final String password;
  private final String user;
  private final int database;
  private Socket socket;
  private InputStream in;
  private OutputStream out;

  /** {@code redis://[user:password@]host:port[/db]} */
  public RespClient(String url) {
    URI uri = URI.create(url);
    this.host = uri.getHost() == null ? "127.0.0.1" : uri.getHost();
    this.port = uri.getPort() < 0 ? 6379 : uri.getPort();
    String info = uri.getUserInfo();
    if (info == null) {
      this.user = null;
      this.password = null;
    } else if (info.contains(":")) {
      String u = info.substring(0, info.indexOf(':'));
      this.user = u.isEmpty() ? null : u;
      this.password = info.substring(info.indexOf(':') + 1);
    } else {
      this.user = null;
      this.password = info;
    }
    String path = uri.getPath();
    this.database = path == null || path.length() <= 1 ? 0 : Integer.parseInt(path.substring(1));
  }

  @Override
  public synchronized Object call(String... args) throws IOException {
    try {
      connect();
      write(args);
      return read();
    } catch (IOException e) {
      close(); // reconnect on the next command
      throw e;
    }
  }

  private void connect() throws IOException {
    if (socket != null) return;
    Socket s = new Socket();
    s.connect(new InetSocketAddress(host, port), 5_000);
    s.setSoTimeout(10_000);
    socket = s;
    in = new BufferedInputStream(s.getInputStream());
    out = s.getOutputStream();
    if (password != null) {
      write(user == null ? new String[] {"AUTH", password} : new String[] {"AUTH", user, password});
      read();
    }
    if (database != 0) {
      write(new String[] {"SELECT", Integer.toString(database)});
      read();
    }
  }

  private void write(String[] args) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    buf.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
    for (String a : args) {
      byte[] b = a.getBytes(StandardCharsets.UTF_8);
      buf.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      buf.write(b);
      buf.write('\r');
      buf.write('\n');
    }
    out.write(buf.toByteArray());
    out.flush();
  }

  private Object read() throws IOException {
    int type = in.read();
    if (type < 0) throw new IOException("Redis closed the connection");
    String line = readLine();
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new IOException("Redis: " + line);
      case ':':
        return Long.parseLong(line);
      case '$': {
        int len = Integer.parseInt(line);
        if (len < 0) return null;
        byte[] b = in.readNBytes(len + 2);
        return new String(b, 0, len, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(line);
        if (n < 0) return null;
        List<Object> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) items.add(read());
        return items;
      }
      default:
        throw new IOException("unexpected Redis reply type " + (char) type);
    }
  }

  private String readLine() throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != '\r') {
      if (c < 0) throw new IOException("Redis closed the connection");
      line.write(c);
    }
    in.read(); // '\n'
    return line.toString(StandardCharsets.UTF_8);
  }

  @Override
  public synchronized void close() {
    if (socket == null) return;
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    socket = null;
  }
}

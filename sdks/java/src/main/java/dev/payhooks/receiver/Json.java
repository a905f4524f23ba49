package dev.payhooks.receiver;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON (RFC 8259) reader and a writer, so the library has no runtime dependency: objects
 * become {@code LinkedHashMap<String, Object>}, arrays {@code List<Object>}, numbers
 * {@link BigDecimal} (amounts stay exact), and {@code true}/{@code false}/{@code null} their Java
 * values. Used for the verified event body and the handler's answers only; bring your own JSON
 * library for anything else.
 */
public final class Json {
  private Json() {}

  /** Thrown for text that is not one JSON value. */
  public static final class ParseException extends Exception {
  private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message);
    }
  }

  /** Parses one JSON value (the whole text, nothing after it but whitespace). */
  public static Object parse(String text) throws ParseException {
    Reader reader = new Reader(text);
    reader.skipWhitespace();
    Object value = reader.value(0);
    reader.skipWhitespace();
    if (reader.pos != text.length()) throw reader.error("unexpected text after the value");
    return value;
  }

  /** Serialises maps, lists, strings, numbers, booleans and null. */
  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  private static void write(Object value, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      quote(s, out);
    } else if (value instanceof Boolean || value instanceof Integer || value instanceof Long) {
      out.append(value);
    } else if (value instanceof BigDecimal d) {
      out.append(d.toString());
    } else if (value instanceof Number n) {
      double d = n.doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) throw new IllegalArgumentException("JSON has no NaN or Infinity");
      out.append(BigDecimal.valueOf(d).stripTrailingZeros().toPlainString());
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!first) out.append(',');
        first = false;
        quote(String.valueOf(e.getKey()), out);
        out.append(':');
        write(e.getValue(), out);
      }
      out.append('}');
    } else if (value instanceof Iterable<?> list) {
      out.append('[');
      boolean first = true;
      for (Object item : list) {
        if (!first) out.append(',');
        first = false;
        write(item, out);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON");
    }
  }

  private static void quote(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20 || c == '\u2028' || c == '\u2029') out.append(String.format("\\u%04x", (int) c));
          else out.append(c);
        }
      }
    }
    out.append('"');
  }

  private static final class Reader {
    private static final int MAX_DEPTH = 256;
    private final String text;
    private int pos;

    Reader(String text) {
      this.text = text;
    }

    ParseException error(String what) {
      return new ParseException(what + " at offset " + pos);
    }

    void skipWhitespace() {
      while (pos < text.length()) {
        char c = text.charAt(pos);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        pos++;
      }
    }

    Object value(int depth) throws ParseException {
      if (depth > MAX_DEPTH) throw error("nested too deeply");
      if (pos >= text.length()) throw error("unexpected end");
      char c = text.charAt(pos);
      return switch (c) {
        case '{' -> object(depth);
        case '[' -> array(depth);
        case '"' -> string();
        case 't' -> literal("true", Boolean.TRUE);
        case 'f' -> literal("false", Boolean.FALSE);
        case 'n' -> literal("null", null);
        default -> {
          if (c == '-' || (c >= '0' && c <= '9')) yield number();
          throw error("unexpected character");
        }
      };
    }

    private Object literal(String word, Object result) throws ParseException {
      if (!text.startsWith(word, pos)) throw error("unexpected literal");
      pos += word.length();
      return result;
    }

    private Map<String, Object> object(int depth) throws ParseException {
      Map<String, Object> map = new LinkedHashMap<>();
      pos++;
      skipWhitespace();
      if (pos < text.length() && text.charAt(pos) == '}') {
        pos++;
        return map;
      }
      while (true) {
        skipWhitespace();
        if (pos >= text.length() || text.charAt(pos) != '"') throw error("expected a string key");
        String key = string();
        skipWhitespace();
        if (pos >= text.length() || text.charAt(pos) != ':') throw error("expected ':'");
        pos++;
        skipWhitespace();
        map.put(key, value(depth + 1));
        skipWhitespace();
        if (pos >= text.length()) throw error("unexpected end");
        char c = text.charAt(pos++);
        if (c == '}') return map;
        if (c != ',') throw error("expected ',' or '}'");
      }
    }

    private List<Object> array(int depth) throws ParseException {
      List<Object> list = new ArrayList<>();
      pos++;
      skipWhitespace();
      if (pos < text.length() && text.charAt(pos) == ']') {
        pos++;
        return list;
      }
      while (true) {
        skipWhitespace();
        list.add(value(depth + 1));
        skipWhitespace();
        if (pos >= text.length()) throw error("unexpected end");
        char c = text.charAt(pos++);
        if (c == ']') return list;
        if (c != ',') throw error("expected ',' or ']'");
      }
    }

    private String string() throws ParseException {
      pos++; // the opening quote
      StringBuilder out = new StringBuilder();
      while (true) {
        if (pos >= text.length()) throw error("unterminated string");
        char c = text.charAt(pos++);
        if (c == '"') return out.toString();
        if (c < 0x20) throw error("control character in a string");
        if (c != '\\') {
          out.append(c);
          continue;
        }
        if (pos >= text.length()) throw error("unterminated escape");
        char e = text.charAt(pos++);
        switch (e) {
          case '"' -> out.append('"');
          case '\\' -> out.append('\\');
          case '/' -> out.append('/');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          case 'u' -> {
            if (pos + 4 > text.length()) throw error("short \\u escape");
            try {
              out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
            } catch (NumberFormatException ex) {
              throw error("bad \\u escape");
            }
            pos += 4;
          }
          default -> throw error("bad escape");
        }
      }
    }

    private BigDecimal number() throws ParseException {
      int start = pos;
      if (text.charAt(pos) == '-') pos++;
      if (pos >= text.length()) throw error("bad number");
      if (text.charAt(pos) == '0') {
        pos++;
      } else if (Character.isDigit(text.charAt(pos))) {
        while (pos < text.length() && isDigit(text.charAt(pos))) pos++;
      } else {
        throw error("bad number");
      }
      if (pos < text.length() && text.charAt(pos) == '.') {
        pos++;
        int digits = pos;
        while (pos < text.length() && isDigit(text.charAt(pos))) pos++;
        if (pos == digits) throw error("bad number");
      }
      if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
        pos++;
        if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) pos++;
        int digits = pos;
        while (pos < text.length() && isDigit(text.charAt(pos))) pos++;
        if (pos == digits) throw error("bad number");
      }
      return new BigDecimal(text.substring(start, pos));
    }

    private static boolean isDigit(char c) {
      return c >= '0' && c <= '9';
    }
  }
}

package dev.payhooks.receiver;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON through Jackson (jackson-databind), strict RFC 8259: objects become
 * {@code LinkedHashMap<String, Object>}, arrays {@code List<Object>}, every number a
 * {@link BigDecimal} (amounts stay exact, "25.50" keeps its scale), and {@code true}/{@code
 * false}/{@code null} their Java values. Used for the verified event body and the handler's
 * answers; use your own ObjectMapper for anything else.
 */
public final class Json {
  private Json() {}

  private static final JsonMapper MAPPER = JsonMapper.builder()
      .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  /** Thrown for text that is not one JSON value. */
  public static final class ParseException extends Exception {
    private static final long serialVersionUID = 1L;

    ParseException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Parses one JSON value (the whole text, nothing after it but whitespace). */
  public static Object parse(String text) throws ParseException {
    JsonNode node;
    try {
      node = MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new ParseException("not JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) { // reading a String: not expected
      throw new UncheckedIOException(e);
    }
    if (node == null || node.isMissingNode()) throw new ParseException("not JSON: no value", null);
    return toJava(node);
  }

  /** Serialises maps, lists, strings, numbers, booleans and null. */
  public static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON", e);
    } catch (IOException e) { // writing to a String: not expected
      throw new UncheckedIOException(e);
    }
  }

  private static Object toJava(JsonNode node) {
    switch (node.getNodeType()) {
      case OBJECT: {
        Map<String, Object> map = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> field = it.next();
          map.put(field.getKey(), toJava(field.getValue()));
        }
        return map;
      }
      case ARRAY: {
        List<Object> list = new ArrayList<>(node.size());
        for (JsonNode item : node) list.add(toJava(item));
        return list;
      }
      case STRING:
        return node.textValue();
      case NUMBER:
        return node.decimalValue();
      case BOOLEAN:
        return node.booleanValue();
      case NULL:
        return null;
      default:
        throw new IllegalStateException("unexpected JSON node " + node.getNodeType());
    }
  }
}

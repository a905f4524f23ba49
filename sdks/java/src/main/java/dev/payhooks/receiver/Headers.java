package dev.payhooks.receiver;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Request headers, looked up by name case-insensitively. Every value of a repeated header is
 * returned, so a delivery with two signature headers is refused rather than half-read.
 */
@FunctionalInterface
public interface Headers {
  /** Every value of the header {@code name} (any case); empty when absent. */
  List<String> all(String name);

  /** Headers from a map of single values (names in any case). */
  static Headers of(Map<String, String> map) {
    return name -> {
      List<String> values = new ArrayList<>();
      for (Map.Entry<String, String> e : map.entrySet()) {
        if (e.getKey() != null && e.getKey().equalsIgnoreCase(name)) values.add(e.getValue());
      }
      return values;
    };
  }

  /** Headers from a multimap, e.g. the JDK HttpServer's {@code exchange.getRequestHeaders()}. */
  static Headers ofMultimap(Map<String, List<String>> map) {
    return name -> {
      List<String> values = new ArrayList<>();
      for (Map.Entry<String, List<String>> e : map.entrySet()) {
        if (e.getKey() != null && e.getKey().equalsIgnoreCase(name) && e.getValue() != null) values.addAll(e.getValue());
      }
      return values;
    };
  }
}

package io.github.resultsync.client;

import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * resultsync's gRPC service config: the canonical
 * {@code clients/go/serviceconfig/service_config.json}, shipped in this jar
 * as the resource {@code io/github/resultsync/client/service_config.json}
 * (generate.sh copies it). It balances round-robin over every address a
 * target resolves to and retries, on UNAVAILABLE, the methods that are safe
 * to send again (the reads and the writes whose request_id makes a repeat
 * harmless; docs/calling.md says which). {@link Resultsync}'s channels use
 * it; {@link #applyTo} gives it to a channel builder of your own.
 */
public final class ServiceConfig {
  private static final String JSON = read();
  private static final Map<String, ?> MAP = asMap(new Parser(JSON).document());

  private ServiceConfig() {}

  /** The service config as JSON, as shipped. */
  public static String json() {
    return JSON;
  }

  /**
   * The service config as {@link ManagedChannelBuilder#defaultServiceConfig}
   * takes it (objects as maps, arrays as lists, numbers as Double); unmodifiable.
   */
  public static Map<String, ?> map() {
    return MAP;
  }

  /**
   * Gives {@code builder} the service config as its default and enables
   * retries; returns it. A service config the name resolver supplies still
   * wins, as with any default.
   */
  public static <T extends ManagedChannelBuilder<?>> T applyTo(T builder) {
    builder.defaultServiceConfig(MAP).enableRetry();
    return builder;
  }

  private static String read() {
    try (InputStream in = ServiceConfig.class.getResourceAsStream("service_config.json")) {
      if (in == null) {
        throw new IllegalStateException("service_config.json is missing from the resultsync-client jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading service_config.json", e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, ?> asMap(Object o) {
    if (!(o instanceof Map)) {
      throw new IllegalStateException("service_config.json is not a JSON object");
    }
    return (Map<String, ?>) o;
  }

  /** A strict JSON parser of the little a service config holds (no dependency for it). */
  private static final class Parser {
    private final String s;
    private int i;

    Parser(String s) {
      this.s = s;
    }

    Object document() {
      Object v = value();
      space();
      if (i != s.length()) {
        throw error("trailing text");
      }
      return v;
    }

    private Object value() {
      space();
      if (i >= s.length()) {
        throw error("unexpected end");
      }
      char c = s.charAt(i);
      switch (c) {
        case '{':
          return object();
        case '[':
          return array();
        case '"':
          return string();
        case 't':
          return literal("true", Boolean.TRUE);
        case 'f':
          return literal("false", Boolean.FALSE);
        case 'n':
          return literal("null", null);
        default:
          return number();
      }
    }

    private Map<String, Object> object() {
      Map<String, Object> m = new LinkedHashMap<>();
      i++;
      space();
      if (accept('}')) {
        return Collections.unmodifiableMap(m);
      }
      do {
        space();
        if (i >= s.length() || s.charAt(i) != '"') {
          throw error("expected a key");
        }
        String k = string();
        space();
        expect(':');
        m.put(k, value());
        space();
      } while (accept(','));
      expect('}');
      return Collections.unmodifiableMap(m);
    }

    private List<Object> array() {
      List<Object> l = new ArrayList<>();
      i++;
      space();
      if (accept(']')) {
        return Collections.unmodifiableList(l);
      }
      do {
        l.add(value());
        space();
      } while (accept(','));
      expect(']');
      return Collections.unmodifiableList(l);
    }

    private String string() {
      StringBuilder b = new StringBuilder();
      i++;
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') {
          return b.toString();
        }
        if (c == '\\') {
          char e = s.charAt(i++);
          switch (e) {
            case 'n' -> b.append('\n');
            case 't' -> b.append('\t');
            case 'r' -> b.append('\r');
            case 'b' -> b.append('\b');
            case 'f' -> b.append('\f');
            case 'u' -> {
              b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
              i += 4;
            }
            default -> b.append(e);
          }
        } else {
          b.append(c);
        }
      }
      throw error("unterminated string");
    }

    private Double number() {
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
        i++;
      }
      try {
        return Double.valueOf(s.substring(start, i));
      } catch (NumberFormatException e) {
        throw error("bad number");
      }
    }

    private Object literal(String word, Object v) {
      if (!s.startsWith(word, i)) {
        throw error("unexpected text");
      }
      i += word.length();
      return v;
    }

    private void space() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    /** Consumes c when it is next. */
    private boolean accept(char c) {
      if (i < s.length() && s.charAt(i) == c) {
        i++;
        return true;
      }
      return false;
    }

    private void expect(char c) {
      if (!accept(c)) {
        throw error("expected '" + c + "'");
      }
    }

    private IllegalStateException error(String what) {
      return new IllegalStateException("service_config.json: " + what + " at offset " + i);
    }
  }
}

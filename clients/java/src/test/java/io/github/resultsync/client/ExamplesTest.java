package io.github.resultsync.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Runs every {@code ```java} example of the documentation (README.md,
 * clients/*&#47;README.md, docs/*.md), which test.sh extracted with
 * clients/examples.py into target/generated-test-sources/examples (one class
 * with a main each, compiled with the tests) and listed in
 * target/examples/index.tsv, against the running servers; an example followed
 * by a {@code ```text} block must print exactly that.
 */
class ExamplesTest {
  private static final Path DIR = Path.of("target", "examples");

  /** Lines "ExampleN TAB file:line TAB tags". */
  private static List<String[]> index() throws IOException {
    Path index = DIR.resolve("index.tsv");
    assertTrue(Files.exists(index), index + " is missing: run clients/java/test.sh, which extracts the examples");
    return Files.readAllLines(index).stream().filter(l -> !l.isBlank()).map(l -> l.split("\t", -1)).toList();
  }

  @Test
  void theDocumentationHasJavaExamplesTlsAmongThem() throws IOException {
    List<String[]> all = index();
    assertTrue(all.stream().anyMatch(e -> e[1].startsWith("clients/java/README.md:")), "none in clients/java/README.md");
    assertTrue(all.stream().anyMatch(e -> List.of(e[2].split(" ")).contains("tls")), "no TLS example");
  }

  @TestFactory
  Stream<DynamicTest> examplesRun() throws IOException {
    return index().stream().map(e -> DynamicTest.dynamicTest(e[1] + " runs", () -> run(e[0], e[1])));
  }

  private static void run(String name, String where) throws Throwable {
    Method main = Class.forName("io.github.resultsync.examples." + name).getMethod("main", String[].class);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream saved = System.out;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      main.invoke(null, (Object) new String[0]);
    } catch (InvocationTargetException ex) {
      throw new AssertionError(where + " failed", ex.getCause());
    } finally {
      System.setOut(saved);
    }
    Path expect = DIR.resolve(name + ".expect");
    if (Files.exists(expect)) {
      assertEquals(Files.readString(expect), out.toString(StandardCharsets.UTF_8),
          where + ": output differs from the text block after it");
    }
  }
}

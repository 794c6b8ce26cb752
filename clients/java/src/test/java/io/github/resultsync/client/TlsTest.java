package io.github.resultsync.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.resultsync.fitness.v1.FitnessResult;
import io.github.resultsync.fitness.v1.GetResultRequest;
import io.github.resultsync.fitness.v1.ListResultsRequest;
import io.github.resultsync.fitness.v1.RecordResultRequest;
import io.github.resultsync.fitness.v1.ResultServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * The Java client over mutual TLS against the TLS results server that
 * deploy/local/test-clients.sh starts (RS_RESULTS_TLS_ADDR, the local CA in
 * RS_TLS_DIR, a second CA in RS_TLS_OTHER_DIR), and the refusals: a client
 * that does not trust the CA, one without a client certificate, one whose
 * certificate another CA signed, and plaintext. A missing setting or server
 * fails the test (never a skip).
 */
class TlsTest {
  private static String env(String name) {
    String v = System.getenv(name);
    assertFalse(v == null || v.isEmpty(),
        name + " is not set (deploy/local/test-clients.sh sets it and starts the TLS results server)");
    return v;
  }

  private static final String ADDR = env("RS_RESULTS_TLS_ADDR");
  private static final String CA = env("RS_TLS_DIR");
  private static final String OTHER = env("RS_TLS_OTHER_DIR");

  private static ResultServiceGrpc.ResultServiceBlockingStub stub(ManagedChannel ch, String token) {
    return ResultServiceGrpc.newBlockingStub(ch).withCallCredentials(Resultsync.bearer(token))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  @Test
  void recordAndReadOverMutualTls() throws Exception {
    long dataId = 6_100_000_000_000L + System.currentTimeMillis() % 1_000_000_000L;
    ManagedChannel ch = Resultsync.tlsChannel(ADDR, CA + "/ca.pem", CA + "/client.pem", CA + "/client-key.pem");
    try {
      stub(ch, "dev-operator").recordResult(RecordResultRequest.newBuilder().setRequestId("java-tls-" + dataId)
          .setDataId(dataId).setDetectId(dataId / 10).setUserId(41).setProjectId(3).setSchoolId(8).setGrade(5)
          .setResult("2.21").setUnit("m").build());
      FitnessResult got = stub(ch, "dev-operator")
          .getResult(GetResultRequest.newBuilder().setSchoolId(8).setDataId(dataId).build()).getResult();
      assertEquals(dataId, got.getDataId());
      assertEquals(1, got.getVersion());
      assertEquals("2.21", got.getResult());
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** why, CA dir (- : the system roots), client certificate dir (- : none). */
  @ParameterizedTest(name = "refused: {0}")
  @CsvSource({
    "the system roots do not know the local CA, -, ca",
    "another CA does not verify the server, other, ca",
    "no client certificate, ca, -",
    "a client certificate another CA signed, ca, other",
  })
  void refused(String why, String caDir, String certDir) throws Exception {
    String ca = caDir.equals("-") ? null : dir(caDir) + "/ca.pem";
    String cert = certDir.equals("-") ? null : dir(certDir) + "/client.pem";
    String key = certDir.equals("-") ? null : dir(certDir) + "/client-key.pem";
    ManagedChannel ch = Resultsync.tlsChannel(ADDR, ca, cert, key);
    try {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> stub(ch, "dev-viewer").listResults(ListResultsRequest.newBuilder().setDetectId(1).setPageSize(1).build()),
          why);
      assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), why + ": " + e);
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void plaintextIsRefused() throws Exception {
    ManagedChannel ch = Resultsync.plaintextChannel(ADDR);
    try {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> stub(ch, "dev-viewer").listResults(ListResultsRequest.newBuilder().setDetectId(1).setPageSize(1).build()));
      assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), e.toString());
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static String dir(String which) {
    return which.equals("other") ? OTHER : CA;
  }
}

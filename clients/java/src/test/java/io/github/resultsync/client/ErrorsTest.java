package io.github.resultsync.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.rpc.BadRequest;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import io.github.resultsync.fitness.v1.CorrectResultRequest;
import io.github.resultsync.fitness.v1.ErrorReason;
import io.github.resultsync.fitness.v1.GetResultRequest;
import io.github.resultsync.fitness.v1.RecordResultRequest;
import io.github.resultsync.fitness.v1.ResultServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The typed error reason ({@link ErrorReason}), RetryInfo's delay and
 * BadRequest's field violations as {@link Resultsync} decodes them: from the
 * running results server's errors (RS_RESULTS_ADDR), and from hand-made
 * statuses for what a client cannot provoke (a RetryInfo, a reason this
 * client does not know).
 */
class ErrorsTest {
  private static final long SCHOOL = 8;
  private static ManagedChannel channel;

  @BeforeAll
  static void connect() {
    String addr = System.getenv("RS_RESULTS_ADDR");
    channel = Resultsync.plaintextChannel(addr == null || addr.isEmpty() ? "127.0.0.1:7101" : addr);
  }

  @AfterAll
  static void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private static ResultServiceGrpc.ResultServiceBlockingStub operator() {
    return ResultServiceGrpc.newBlockingStub(channel)
        .withCallCredentials(Resultsync.bearer("dev-operator"))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /** A campaign id no other run uses (Java error tests: 7.7e12 + ...). */
  private static long freshCampaign() {
    return 7_700_000_000_000L + (System.currentTimeMillis() % 1_000_000_000L) * 100 + ThreadLocalRandom.current().nextInt(100);
  }

  private static StatusRuntimeException failure(Executable call) {
    return assertThrows(StatusRuntimeException.class, call);
  }

  private static CorrectResultRequest correction(long dataId, String requestId, String value) {
    return CorrectResultRequest.newBuilder().setRequestId(requestId).setSchoolId(SCHOOL).setDataId(dataId)
        .setExpectedVersion(1).setResult(value).setUnit("m").setReason("re-measured").build();
  }

  /** Records dataId at 2.21, then corrects it to 2.31 at version 1 (request id "java-e1-<dataId>"). */
  private static void recordedAndCorrected(long campaign, long dataId) {
    operator().recordResult(RecordResultRequest.newBuilder().setRequestId("java-e-" + dataId).setDataId(dataId)
        .setDetectId(campaign).setUserId(41).setProjectId(3).setSchoolId(SCHOOL).setGrade(5)
        .setResult("2.21").setUnit("m").build());
    operator().correctResult(correction(dataId, "java-e1-" + dataId, "2.31"));
  }

  @Test
  void aStaleCorrectionIsVersionConflict() {
    long campaign = freshCampaign();
    long dataId = campaign * 10 + 1;
    recordedAndCorrected(campaign, dataId);
    StatusRuntimeException e = failure(() -> operator().correctResult(correction(dataId, "java-e2-" + dataId, "2.41")));
    assertEquals(Status.Code.ABORTED, e.getStatus().getCode());
    assertEquals(ErrorReason.VERSION_CONFLICT, Resultsync.errorReason(e));
    assertEquals(Optional.empty(), Resultsync.retryDelay(e)); // re-read, do not wait
    assertEquals(List.of(), Resultsync.fieldViolations(e));
  }

  @Test
  void aReusedRequestIdIsRequestIdReused() {
    long campaign = freshCampaign();
    long dataId = campaign * 10 + 2;
    recordedAndCorrected(campaign, dataId);
    // The same request id with another request: refused, nothing done.
    StatusRuntimeException e = failure(() -> operator().correctResult(correction(dataId, "java-e1-" + dataId, "2.51")));
    assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
    assertEquals(ErrorReason.REQUEST_ID_REUSED, Resultsync.errorReason(e));
  }

  @Test
  void invalidFieldsAreFieldViolations() {
    long campaign = freshCampaign();
    StatusRuntimeException e = failure(() -> operator().recordResult(RecordResultRequest.newBuilder()
        .setRequestId("java-invalid").setDataId(campaign * 10 + 3).setDetectId(campaign).setUserId(0).setProjectId(3)
        .setSchoolId(SCHOOL).setGrade(13).setResult("2.21").setUnit("m").build()));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    assertEquals(ErrorReason.FIELD_VIOLATION, Resultsync.errorReason(e));
    List<BadRequest.FieldViolation> violations = Resultsync.fieldViolations(e);
    assertEquals(List.of("grade", "user_id"),
        violations.stream().map(BadRequest.FieldViolation::getField).sorted().collect(Collectors.toList()));
    assertTrue(violations.stream().noneMatch(v -> v.getDescription().isEmpty()), violations.toString());
  }

  @Test
  void aMissingResultAndAMissingToken() {
    StatusRuntimeException missing = failure(() -> operator().getResult(
        GetResultRequest.newBuilder().setSchoolId(SCHOOL).setDataId(freshCampaign() * 10 + 4).build()));
    assertEquals(List.of(Status.Code.NOT_FOUND, ErrorReason.RESULT_NOT_FOUND),
        List.of(missing.getStatus().getCode(), Resultsync.errorReason(missing)));
    StatusRuntimeException anonymous = failure(() -> ResultServiceGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .getResult(GetResultRequest.newBuilder().setSchoolId(SCHOOL).setDataId(1).build()));
    assertEquals(List.of(Status.Code.UNAUTHENTICATED, ErrorReason.UNAUTHENTICATED),
        List.of(anonymous.getStatus().getCode(), Resultsync.errorReason(anonymous)));
  }

  /** A status error as a call throws it, with hand-made details. */
  private static StatusRuntimeException failed(Code code, com.google.protobuf.Message... details) {
    com.google.rpc.Status.Builder st = com.google.rpc.Status.newBuilder().setCode(code.getNumber()).setMessage("hand-made");
    for (com.google.protobuf.Message d : details) {
      st.addDetails(Any.pack(d));
    }
    return StatusProto.toStatusRuntimeException(st.build());
  }

  private static ErrorInfo info(String reason, String domain) {
    return ErrorInfo.newBuilder().setReason(reason).setDomain(domain).build();
  }

  @Test
  void retryDelayAndReasonsThisClientDoesNotKnow() {
    StatusRuntimeException contention = failed(Code.ABORTED, info("CONTENTION", Resultsync.DOMAIN),
        RetryInfo.newBuilder().setRetryDelay(com.google.protobuf.Duration.newBuilder().setSeconds(1).setNanos(50_000_000)).build());
    assertEquals(ErrorReason.CONTENTION, Resultsync.errorReason(contention));
    assertEquals(Optional.of(Duration.ofMillis(1050)), Resultsync.retryDelay(contention));
    // A reason a newer server may add, one named like Java's UNRECOGNIZED,
    // another domain's reason, no ErrorInfo, not a status error: unspecified
    // (the caller goes by the code).
    for (Throwable e : List.of(
        failed(Code.UNAVAILABLE, info("SOMETHING_NEW", Resultsync.DOMAIN)),
        failed(Code.UNAVAILABLE, info("UNRECOGNIZED", Resultsync.DOMAIN)),
        failed(Code.ABORTED, info("VERSION_CONFLICT", "example.com")),
        failed(Code.INTERNAL),
        new IllegalStateException("not an RPC"))) {
      assertEquals(ErrorReason.ERROR_REASON_UNSPECIFIED, Resultsync.errorReason(e), e.toString());
      assertFalse(Resultsync.retryDelay(e).isPresent(), e.toString());
    }
  }
}

package io.github.resultsync.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resultsync.fitness.v1.ApproveRepairRequest;
import io.github.resultsync.fitness.v1.ApproveRepairResponse;
import io.github.resultsync.fitness.v1.FitnessResult;
import io.github.resultsync.fitness.v1.GetResultRequest;
import io.github.resultsync.fitness.v1.GetResultResponse;
import io.github.resultsync.fitness.v1.RepairServiceGrpc;
import io.github.resultsync.fitness.v1.ResultServiceGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Resultsync's channels apply resultsync's service config ({@link ServiceConfig},
 * the canonical clients/go/serviceconfig/service_config.json shipped in the
 * jar): a method safe to send again is retried on UNAVAILABLE, one that is
 * not is sent once. Against an in-process server that answers UNAVAILABLE
 * twice per method, then succeeds.
 */
class RetriesTest {
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private Server server;
  private ManagedChannel channel;

  private boolean fails(String method, StreamObserver<?> out) {
    int n = calls.computeIfAbsent(method, k -> new AtomicInteger()).incrementAndGet();
    if (n <= 2) {
      out.onError(Status.UNAVAILABLE.withDescription(method + ": failure " + n).asRuntimeException());
      return true;
    }
    return false;
  }

  @BeforeEach
  void start() throws Exception {
    ServerServiceDefinition results = ServerServiceDefinition.builder(ResultServiceGrpc.SERVICE_NAME)
        .addMethod(ResultServiceGrpc.getGetResultMethod(), ServerCalls.asyncUnaryCall(
            (GetResultRequest req, StreamObserver<GetResultResponse> out) -> {
              if (!fails("GetResult", out)) {
                out.onNext(GetResultResponse.newBuilder()
                    .setResult(FitnessResult.newBuilder().setDataId(req.getDataId()).setVersion(1)).build());
                out.onCompleted();
              }
            }))
        .build();
    ServerServiceDefinition repairs = ServerServiceDefinition.builder(RepairServiceGrpc.SERVICE_NAME)
        .addMethod(RepairServiceGrpc.getApproveRepairMethod(), ServerCalls.asyncUnaryCall(
            (ApproveRepairRequest req, StreamObserver<ApproveRepairResponse> out) -> {
              if (!fails("ApproveRepair", out)) {
                out.onNext(ApproveRepairResponse.getDefaultInstance());
                out.onCompleted();
              }
            }))
        .build();
    server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
        .addService(results).addService(repairs).build().start();
    channel = Resultsync.plaintextChannel("127.0.0.1:" + server.getPort());
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private int calls(String method) {
    return calls.getOrDefault(method, new AtomicInteger()).get();
  }

  @Test
  void theServiceConfigIsShippedInTheJar() {
    assertTrue(ServiceConfig.json().startsWith("{"), ServiceConfig.json());
    List<?> methodConfig = (List<?>) ServiceConfig.map().get("methodConfig");
    Map<?, ?> policy = (Map<?, ?>) ((Map<?, ?>) methodConfig.get(0)).get("retryPolicy");
    assertEquals(List.of("UNAVAILABLE"), policy.get("retryableStatusCodes"));
    assertTrue(policy.get("maxAttempts") instanceof Double, "numbers are Doubles, as gRPC wants them");
    // Every method name of the file is in the parsed map.
    long names = ServiceConfig.json().split("\"method\"", -1).length - 1;
    assertEquals(names, methodConfig.stream()
        .mapToLong(mc -> ((List<?>) ((Map<?, ?>) mc).get("name")).size()).sum());
  }

  @Test
  void aSafeMethodIsRetriedOnUnavailable() {
    GetResultResponse got = ResultServiceGrpc.newBlockingStub(channel).withCallCredentials(Resultsync.bearer("dev-viewer"))
        .withDeadlineAfter(20, TimeUnit.SECONDS)
        .getResult(GetResultRequest.newBuilder().setSchoolId(8).setDataId(7).build());
    assertEquals(7, got.getResult().getDataId());
    assertEquals(3, calls("GetResult")); // two UNAVAILABLE, then the answer
  }

  @Test
  void anUnsafeMethodIsSentOnce() {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> RepairServiceGrpc.newBlockingStub(channel).withCallCredentials(Resultsync.bearer("dev-admin"))
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .approveRepair(ApproveRepairRequest.newBuilder().setRepairId("r-1").build()));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    assertEquals(1, calls("ApproveRepair"));
  }

  @Test
  void withoutTheServiceConfigNothingIsRetried() throws InterruptedException {
    ManagedChannel bare = ManagedChannelBuilder.forTarget("127.0.0.1:" + server.getPort()).usePlaintext().build();
    try {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> ResultServiceGrpc.newBlockingStub(bare).withDeadlineAfter(20, TimeUnit.SECONDS)
              .getResult(GetResultRequest.newBuilder().setSchoolId(8).setDataId(7).build()));
      assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
      assertEquals(1, calls("GetResult"));
      assertFalse(calls.containsKey("ApproveRepair"));
    } finally {
      bare.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}

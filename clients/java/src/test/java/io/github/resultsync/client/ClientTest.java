package io.github.resultsync.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resultsync.fitness.v1.CancelRepairRequest;
import io.github.resultsync.fitness.v1.CorrectResultRequest;
import io.github.resultsync.fitness.v1.CreateRepairRequest;
import io.github.resultsync.fitness.v1.CreateRepairResponse;
import io.github.resultsync.fitness.v1.FitnessResult;
import io.github.resultsync.fitness.v1.GetRepairRequest;
import io.github.resultsync.fitness.v1.GetRepairResponse;
import io.github.resultsync.fitness.v1.GetResultRequest;
import io.github.resultsync.fitness.v1.ListResultsRequest;
import io.github.resultsync.fitness.v1.ListResultsResponse;
import io.github.resultsync.fitness.v1.PlanRepairRequest;
import io.github.resultsync.fitness.v1.PlanRepairResponse;
import io.github.resultsync.fitness.v1.ReconcileDepth;
import io.github.resultsync.fitness.v1.ReconcileScope;
import io.github.resultsync.fitness.v1.ReconcileServiceGrpc;
import io.github.resultsync.fitness.v1.ReconciliationRun;
import io.github.resultsync.fitness.v1.RecordResultRequest;
import io.github.resultsync.fitness.v1.RepairAction;
import io.github.resultsync.fitness.v1.RepairServiceGrpc;
import io.github.resultsync.fitness.v1.RepairState;
import io.github.resultsync.fitness.v1.ResultServiceGrpc;
import io.github.resultsync.fitness.v1.RunState;
import io.github.resultsync.fitness.v1.StartReconciliationRunRequest;
import io.github.resultsync.fitness.v1.VersionConflict;
import io.github.resultsync.fitness.v1.WatchReconciliationRunRequest;
import io.github.resultsync.fitness.v1.WatchReconciliationRunResponse;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java client against the running resultsync servers. Addresses come from
 * RS_RESULTS_ADDR, RS_RECONCILE_ADDR and RS_REPAIR_ADDR (the local stack's
 * ports by default; deploy/local/test-clients.sh sets them). Every test works
 * on a fresh campaign; a server that does not answer fails the test.
 */
class ClientTest {
  private static final long SCHOOL = 8;
  private static final Set<RunState> TERMINAL =
      Set.of(RunState.RUN_STATE_SUCCEEDED, RunState.RUN_STATE_FAILED, RunState.RUN_STATE_BOUNDARY_NOT_REACHED);

  private static ManagedChannel results;
  private static ManagedChannel reconcile;
  private static ManagedChannel repair;

  private static String addr(String env, String def) {
    String v = System.getenv(env);
    return v == null || v.isEmpty() ? def : v;
  }

  @BeforeAll
  static void connect() {
    results = Resultsync.plaintextChannel(addr("RS_RESULTS_ADDR", "127.0.0.1:7101"));
    reconcile = Resultsync.plaintextChannel(addr("RS_RECONCILE_ADDR", "127.0.0.1:7104"));
    repair = Resultsync.plaintextChannel(addr("RS_REPAIR_ADDR", "127.0.0.1:7105"));
  }

  @AfterAll
  static void close() throws InterruptedException {
    for (ManagedChannel ch : List.of(results, reconcile, repair)) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static ResultServiceGrpc.ResultServiceBlockingStub resultsAs(String token) {
    return ResultServiceGrpc.newBlockingStub(results)
        .withCallCredentials(Resultsync.bearer(token))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /** A campaign id no other run uses (Java client range: 7.5e12 + ...). */
  private static long freshCampaign() {
    return 7_500_000_000_000L + (System.currentTimeMillis() % 1_000_000_000L) * 100 + ThreadLocalRandom.current().nextInt(100);
  }

  private static FitnessResult record(ResultServiceGrpc.ResultServiceBlockingStub stub, long campaign, long dataId, String value) {
    return stub.recordResult(RecordResultRequest.newBuilder()
            .setRequestId("java-" + dataId).setDataId(dataId).setDetectId(campaign).setUserId(41).setProjectId(3)
            .setSchoolId(SCHOOL).setGrade(5).setResult(value).setUnit("m").build())
        .getResult();
  }

  @Test
  void recordThenCorrectWithTheVersionRead() {
    long campaign = freshCampaign();
    long dataId = campaign * 10 + 1;
    FitnessResult recorded = record(resultsAs("dev-operator"), campaign, dataId, "2.21");
    assertEquals(1, recorded.getVersion());
    FitnessResult got = resultsAs("dev-viewer")
        .getResult(GetResultRequest.newBuilder().setSchoolId(SCHOOL).setDataId(dataId).build()).getResult();
    assertEquals(List.of(1L, "2.21", "m"), List.of(got.getVersion(), got.getResult(), got.getUnit()));
    var corrected = resultsAs("dev-operator").correctResult(CorrectResultRequest.newBuilder()
        .setRequestId("java-c-" + dataId).setSchoolId(SCHOOL).setDataId(dataId).setExpectedVersion(got.getVersion())
        .setResult("2.31").setUnit("m").setReason("measured again").build());
    assertEquals(2, corrected.getResult().getVersion());
    assertEquals("fitness-result-" + dataId + "-v2", corrected.getEventId());
    FitnessResult again = resultsAs("dev-viewer")
        .getResult(GetResultRequest.newBuilder().setSchoolId(SCHOOL).setDataId(dataId).build()).getResult();
    assertEquals(List.of(2L, "2.31"), List.of(again.getVersion(), again.getResult()));
  }

  @Test
  void staleCorrectionIsAbortedWithATypedVersionConflict() {
    long campaign = freshCampaign();
    long dataId = campaign * 10 + 2;
    var op = resultsAs("dev-operator");
    record(op, campaign, dataId, "2.21");
    CorrectResultRequest.Builder c = CorrectResultRequest.newBuilder()
        .setSchoolId(SCHOOL).setDataId(dataId).setExpectedVersion(1).setUnit("m");
    op.correctResult(c.setRequestId("java-c1-" + dataId).setResult("2.31").setReason("first").build());
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> resultsAs("dev-operator").correctResult(c.setRequestId("java-c2-" + dataId).setResult("2.41").setReason("stale").build()));
    assertEquals(Status.Code.ABORTED, e.getStatus().getCode());
    VersionConflict conflict = Resultsync.versionConflict(e).orElseThrow();
    assertEquals(List.of(dataId, 1L, 2L),
        List.of(conflict.getDataId(), conflict.getExpectedVersion(), conflict.getCurrentVersion()));
  }

  @Test
  void listResultsPagesThroughEveryRecordOnce() {
    long campaign = freshCampaign();
    List<Long> ids = new ArrayList<>();
    for (long i = 1; i <= 5; i++) {
      ids.add(campaign * 10 + i);
      record(resultsAs("dev-operator"), campaign, campaign * 10 + i, "1.50");
    }
    List<Long> seen = new ArrayList<>();
    String token = "";
    int pages = 0;
    do {
      ListResultsResponse page = resultsAs("dev-viewer").listResults(
          ListResultsRequest.newBuilder().setDetectId(campaign).setPageSize(2).setPageToken(token).build());
      assertTrue(page.getResultsCount() <= 2);
      page.getResultsList().forEach(r -> seen.add(r.getDataId()));
      token = page.getNextPageToken();
      pages++;
      assertTrue(pages < 10, "ListResults did not end");
    } while (!token.isEmpty());
    seen.sort(null);
    assertEquals(ids, seen);
    assertEquals(3, pages);
  }

  @Test
  void tokensAndRolesAreEnforced() {
    StatusRuntimeException anonymous = assertThrows(StatusRuntimeException.class,
        () -> ResultServiceGrpc.newBlockingStub(results).withDeadlineAfter(10, TimeUnit.SECONDS)
            .getResult(GetResultRequest.newBuilder().setSchoolId(SCHOOL).setDataId(1).build()));
    assertEquals(Status.Code.UNAUTHENTICATED, anonymous.getStatus().getCode());
    StatusRuntimeException viewer = assertThrows(StatusRuntimeException.class,
        () -> record(resultsAs("dev-viewer"), freshCampaign(), 42, "1.00"));
    assertEquals(Status.Code.PERMISSION_DENIED, viewer.getStatus().getCode());
  }

  /** A projection row no shard has (a stray writer), written with clickhouse-client. */
  private static void insertStrayRow(long campaign, long dataId) throws Exception {
    long now = System.currentTimeMillis();
    Process p = new ProcessBuilder("clickhouse-client", "--port", addr("RS_CH_PORT", "19000"),
        "-d", addr("RS_CH_DATABASE", "resultsync"), "-q",
        "INSERT INTO fitness_result_versions (detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, "
            + "result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms) VALUES ("
            + campaign + ", " + dataId + ", 9, 3, " + SCHOOL + ", 5, 1, 0, 4.44, 'm', 0, 'stray-writer-" + dataId
            + "', 'shard-0', " + now + ", " + now + ")")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "clickhouse-client did not finish");
    assertEquals(0, p.exitValue(), "clickhouse-client: " + out);
  }

  /** Consumes WatchReconciliationRun until the run is terminal, then cancels the stream. */
  private static ReconciliationRun watchRun(String runId) {
    Context.CancellableContext ctx = Context.current().withCancellation();
    try {
      return ctx.call(() -> {
        Iterator<WatchReconciliationRunResponse> updates = ReconcileServiceGrpc.newBlockingStub(reconcile)
            .withCallCredentials(Resultsync.bearer("dev-operator")).withDeadlineAfter(120, TimeUnit.SECONDS)
            .watchReconciliationRun(WatchReconciliationRunRequest.newBuilder().setRunId(runId).build());
        while (updates.hasNext()) {
          ReconciliationRun run = updates.next().getRun();
          assertEquals(runId, run.getRunId());
          if (TERMINAL.contains(run.getState())) {
            return run;
          }
        }
        throw new AssertionError("the watch of run " + runId + " ended before the run did");
      });
    } catch (Exception e) {
      throw new AssertionError(e);
    } finally {
      ctx.cancel(null);
    }
  }

  @Test
  void reconciliationIsWatchedAndARepairPlannedCreatedAndRead() throws Exception {
    long campaign = freshCampaign();
    record(resultsAs("dev-operator"), campaign, campaign * 10 + 1, "1.75");
    record(resultsAs("dev-operator"), campaign, campaign * 10 + 2, "1.75");
    long stray = campaign * 10 + 9;
    insertStrayRow(campaign, stray);

    var rec = ReconcileServiceGrpc.newBlockingStub(reconcile).withCallCredentials(Resultsync.bearer("dev-operator"));
    ReconciliationRun run = null;
    // The fresh records may still be on their way: a run that cannot reach a
    // stable boundary is started again.
    for (int i = 0; i < 3; i++) {
      String runId = rec.withDeadlineAfter(10, TimeUnit.SECONDS).startReconciliationRun(StartReconciliationRunRequest.newBuilder()
          .setScope(ReconcileScope.newBuilder().setDetectId(campaign))
          .setDepth(ReconcileDepth.RECONCILE_DEPTH_CONTENT).build()).getRun().getRunId();
      run = watchRun(runId);
      if (run.getState() != RunState.RUN_STATE_BOUNDARY_NOT_REACHED) {
        break;
      }
      Thread.sleep(1000);
    }
    assertEquals(RunState.RUN_STATE_SUCCEEDED, run.getState(), run.getErrorMessage());
    assertEquals(1, run.getDiscrepancyCount());

    var rep = RepairServiceGrpc.newBlockingStub(repair).withCallCredentials(Resultsync.bearer("dev-operator"))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
    PlanRepairResponse plan = rep.planRepair(PlanRepairRequest.newBuilder().setRunId(run.getRunId()).build());
    assertEquals(1, plan.getItemsTotal());
    assertEquals(1, plan.getActionsCount());
    assertEquals(RepairAction.REPAIR_ACTION_REMOVE, plan.getActions(0).getAction());
    assertEquals(1, plan.getActions(0).getItems());
    assertTrue(plan.getActions(0).getRequiresApproval());
    assertEquals(stray, plan.getItems(0).getDataId());

    CreateRepairResponse created = rep.createRepair(CreateRepairRequest.newBuilder()
        .setRunId(run.getRunId()).setReason("java client test").setRequestId("java-" + run.getRunId()).build());
    assertEquals(1, created.getRepairsCount());
    String id = created.getRepairs(0).getRepairId();
    GetRepairResponse got = rep.getRepair(GetRepairRequest.newBuilder().setRepairId(id).build());
    assertEquals(id, got.getRepair().getRepairId());
    assertEquals(RepairAction.REPAIR_ACTION_REMOVE, got.getRepair().getAction());
    assertEquals(RepairState.REPAIR_STATE_AWAITING_APPROVAL, got.getRepair().getState());
    assertFalse(got.getTransitionsList().isEmpty(), "a repair records its state transitions");
    rep.cancelRepair(CancelRepairRequest.newBuilder().setRepairId(id).setReason("test done").build());
  }
}

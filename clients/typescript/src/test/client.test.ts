// The TypeScript client against the running resultsync servers (node's test
// runner). Addresses come from RS_RESULTS_ADDR, RS_RECONCILE_ADDR and
// RS_REPAIR_ADDR (the local stack's ports by default;
// deploy/local/test-clients.sh sets them). Every test works on a fresh
// campaign; a server that does not answer fails the test (never a skip).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";

import { Code, ConnectError, clients, createClient, reconcile, repair, result, transport, versionConflict } from "../index.js";

const url = (env: string, def: string) => `http://${process.env[env] ?? def}`;
const urls = {
  results: url("RS_RESULTS_ADDR", "127.0.0.1:7101"),
  reconcile: url("RS_RECONCILE_ADDR", "127.0.0.1:7104"),
  repair: url("RS_REPAIR_ADDR", "127.0.0.1:7105"),
};
const operator = clients(urls, "dev-operator");
const viewer = clients(urls, "dev-viewer");
const SCHOOL = 8n;
const opts = { timeoutMs: 10_000 };

/** A campaign id no other run uses (TypeScript client range: 9e12 + ...). */
function freshCampaign(): bigint {
  return 9_000_000_000_000n + BigInt(Date.now() % 1_000_000_000) * 100n + BigInt(Math.floor(Math.random() * 100));
}

async function record(c: typeof operator, campaign: bigint, dataId: bigint, value: string) {
  const resp = await c.results.recordResult(
    { requestId: `ts-${dataId}`, dataId, detectId: campaign, userId: 41n, projectId: 3n, schoolId: SCHOOL, grade: 5, result: value, unit: "m" },
    opts,
  );
  assert.ok(resp.result);
  return resp.result;
}

test("record 2.21, then correct to 2.31 with the version read", async () => {
  const campaign = freshCampaign();
  const dataId = campaign * 10n + 1n;
  const recorded = await record(operator, campaign, dataId, "2.21");
  assert.equal(recorded.version, 1n);
  const got = (await viewer.results.getResult({ schoolId: SCHOOL, dataId }, opts)).result!;
  assert.deepEqual([got.version, got.result, got.unit], [1n, "2.21", "m"]);
  const corrected = await operator.results.correctResult(
    { requestId: `ts-c-${dataId}`, schoolId: SCHOOL, dataId, expectedVersion: got.version, result: "2.31", unit: "m", reason: "measured again" },
    opts,
  );
  assert.equal(corrected.result?.version, 2n);
  assert.equal(corrected.eventId, `fitness-result-${dataId}-v2`);
  const again = (await viewer.results.getResult({ schoolId: SCHOOL, dataId }, opts)).result!;
  assert.deepEqual([again.version, again.result], [2n, "2.31"]);
});

test("a stale correction is ABORTED with a typed VersionConflict", async () => {
  const campaign = freshCampaign();
  const dataId = campaign * 10n + 2n;
  await record(operator, campaign, dataId, "2.21");
  await operator.results.correctResult(
    { requestId: `ts-c1-${dataId}`, schoolId: SCHOOL, dataId, expectedVersion: 1n, result: "2.31", unit: "m", reason: "first" },
    opts,
  );
  const err = await operator.results
    .correctResult({ requestId: `ts-c2-${dataId}`, schoolId: SCHOOL, dataId, expectedVersion: 1n, result: "2.41", unit: "m", reason: "stale" }, opts)
    .then(
      () => assert.fail("the stale correction succeeded"),
      (e: unknown) => ConnectError.from(e),
    );
  assert.equal(err.code, Code.Aborted);
  const conflict = versionConflict(err);
  assert.ok(conflict, "no VersionConflict detail");
  assert.equal(conflict.$typeName, "fitness.v1.VersionConflict");
  assert.deepEqual([conflict.dataId, conflict.expectedVersion, conflict.currentVersion], [dataId, 1n, 2n]);
});

test("ListResults pages through every record once", async () => {
  const campaign = freshCampaign();
  const ids = [1n, 2n, 3n, 4n, 5n].map((i) => campaign * 10n + i);
  for (const id of ids) {
    await record(operator, campaign, id, "1.50");
  }
  const seen: bigint[] = [];
  let pageToken = "";
  let pages = 0;
  do {
    const page = await viewer.results.listResults({ detectId: campaign, pageSize: 2, pageToken }, opts);
    assert.ok(page.results.length <= 2);
    seen.push(...page.results.map((r) => r.dataId));
    pageToken = page.nextPageToken;
    pages++;
    assert.ok(pages < 10, "ListResults did not end");
  } while (pageToken !== "");
  assert.deepEqual(seen.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), ids);
  assert.equal(pages, 3);
});

test("tokens and roles are enforced", async () => {
  const anonymous = createClient(result.ResultService, transport(urls.results));
  const e1 = await anonymous.getResult({ schoolId: SCHOOL, dataId: 1n }, opts).then(
    () => assert.fail("an unauthenticated call succeeded"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(e1.code, Code.Unauthenticated);
  const e2 = await record(viewer, freshCampaign(), 42n, "1.00").then(
    () => assert.fail("a viewer recorded a result"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(e2.code, Code.PermissionDenied);
});

/** A projection row no shard has (a stray writer), written with clickhouse-client. */
function insertStrayRow(campaign: bigint, dataId: bigint) {
  const now = Date.now();
  execFileSync(
    "clickhouse-client",
    [
      "--port", process.env.RS_CH_PORT ?? "19000", "-d", process.env.RS_CH_DATABASE ?? "resultsync", "-q",
      "INSERT INTO fitness_result_versions (detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, " +
        "result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms) VALUES " +
        `(${campaign}, ${dataId}, 9, 3, ${SCHOOL}, 5, 1, 0, 4.44, 'm', 0, 'stray-writer-${dataId}', 'shard-0', ${now}, ${now})`,
    ],
    { stdio: "pipe", timeout: 60_000 },
  );
}

const terminal = new Set([reconcile.RunState.SUCCEEDED, reconcile.RunState.FAILED, reconcile.RunState.BOUNDARY_NOT_REACHED]);

/**
 * Consumes WatchReconciliationRun until the run is terminal, then cancels
 * the stream. The deadline is an AbortSignal.timeout: with Connect 2.1's
 * timeoutMs, leaving a stream early keeps its deadline timer armed, and the
 * process alive until it fires.
 */
async function watchRun(runId: string) {
  const cancel = new AbortController();
  const signal = AbortSignal.any([cancel.signal, AbortSignal.timeout(120_000)]);
  try {
    for await (const update of operator.reconcile.watchReconciliationRun({ runId }, { signal })) {
      assert.equal(update.run?.runId, runId);
      if (update.run && terminal.has(update.run.state)) {
        return update.run;
      }
    }
  } finally {
    cancel.abort();
  }
  assert.fail(`the watch of run ${runId} ended before the run did`);
}

test("a reconciliation is watched as a stream, and a repair planned, created and read", async () => {
  const campaign = freshCampaign();
  await record(operator, campaign, campaign * 10n + 1n, "1.75");
  await record(operator, campaign, campaign * 10n + 2n, "1.75");
  const stray = campaign * 10n + 9n;
  insertStrayRow(campaign, stray);

  // The fresh records may still be on their way: a run that cannot reach a
  // stable boundary is started again.
  let run;
  for (let i = 0; i < 3; i++) {
    const started = await operator.reconcile.startReconciliationRun(
      { scope: { detectId: campaign }, depth: reconcile.ReconcileDepth.CONTENT },
      opts,
    );
    run = await watchRun(started.run!.runId);
    if (run.state !== reconcile.RunState.BOUNDARY_NOT_REACHED) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.ok(run);
  assert.equal(run.state, reconcile.RunState.SUCCEEDED, `run ended ${reconcile.RunState[run.state]}: ${run.errorMessage}`);
  assert.equal(run.discrepancyCount, 1n);

  const plan = await operator.repair.planRepair({ runId: run.runId }, opts);
  assert.equal(plan.itemsTotal, 1n);
  assert.deepEqual(
    plan.actions.map((a) => [a.action, a.items, a.requiresApproval]),
    [[repair.RepairAction.REMOVE, 1n, true]],
  );
  assert.equal(plan.items[0]?.dataId, stray);

  const created = await operator.repair.createRepair({ runId: run.runId, reason: "typescript client test", requestId: `ts-${run.runId}` }, opts);
  assert.equal(created.repairs.length, 1);
  const id = created.repairs[0]!.repairId;
  const got = await operator.repair.getRepair({ repairId: id }, opts);
  assert.equal(got.repair?.repairId, id);
  assert.equal(got.repair?.action, repair.RepairAction.REMOVE);
  assert.equal(got.repair?.state, repair.RepairState.AWAITING_APPROVAL);
  assert.ok(got.transitions.length > 0, "a repair records its state transitions");
  await operator.repair.cancelRepair({ repairId: id, reason: "test done" }, opts);
});

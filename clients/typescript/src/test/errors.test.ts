// The typed error reason (fitness.v1.ErrorReason), RetryInfo's delay and
// BadRequest's field violations as the client decodes them: from the
// running servers' errors, and from hand-made details for what a client
// cannot provoke (a RetryInfo, a reason this client does not know).
import assert from "node:assert/strict";
import { test } from "node:test";

import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

import { Code, ConnectError, DOMAIN, ErrorReason, clients, errorReason, fieldViolations, retryDelayMs } from "../index.js";

const results = `http://${process.env.RS_RESULTS_ADDR ?? "127.0.0.1:7101"}`;
const operator = clients({ results, reconcile: results, repair: results }, "dev-operator").results;
const anonymous = clients({ results, reconcile: results, repair: results }).results;
const SCHOOL = 8n;
const opts = { timeoutMs: 10_000 };

/** A campaign id no other run uses (TypeScript error tests: 9.5e12 + ...). */
function freshCampaign(): bigint {
  return 9_500_000_000_000n + BigInt(Date.now() % 1_000_000_000) * 100n + BigInt(Math.floor(Math.random() * 100));
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  return call.then(
    () => assert.fail("the call succeeded"),
    (e: unknown) => ConnectError.from(e),
  );
}

async function recorded(dataId: bigint, campaign: bigint) {
  await operator.recordResult({ requestId: `ts-e-${dataId}`, dataId, detectId: campaign, userId: 41n, projectId: 3n,
    schoolId: SCHOOL, grade: 5, result: "2.21", unit: "m" }, opts);
  await operator.correctResult({ requestId: `ts-e1-${dataId}`, schoolId: SCHOOL, dataId, expectedVersion: 1n,
    result: "2.31", unit: "m", reason: "first" }, opts);
}

test("a stale correction is VERSION_CONFLICT", async () => {
  const campaign = freshCampaign();
  const dataId = campaign * 10n + 1n;
  await recorded(dataId, campaign);
  const err = await failure(operator.correctResult({ requestId: `ts-e2-${dataId}`, schoolId: SCHOOL, dataId,
    expectedVersion: 1n, result: "2.41", unit: "m", reason: "stale" }, opts));
  assert.equal(err.code, Code.Aborted);
  assert.equal(errorReason(err), ErrorReason.VERSION_CONFLICT);
  assert.equal(ErrorReason[errorReason(err)], "VERSION_CONFLICT");
  assert.equal(retryDelayMs(err), undefined); // re-read, do not wait
  assert.deepEqual(fieldViolations(err), []);
});

test("a reused requestId is REQUEST_ID_REUSED", async () => {
  const campaign = freshCampaign();
  const dataId = campaign * 10n + 2n;
  await recorded(dataId, campaign);
  // The same requestId with another request: refused, nothing done.
  const err = await failure(operator.correctResult({ requestId: `ts-e1-${dataId}`, schoolId: SCHOOL, dataId,
    expectedVersion: 1n, result: "2.51", unit: "m", reason: "first" }, opts));
  assert.equal(err.code, Code.FailedPrecondition);
  assert.equal(errorReason(err), ErrorReason.REQUEST_ID_REUSED);
});

test("invalid fields are FIELD_VIOLATION with each field named", async () => {
  const campaign = freshCampaign();
  const err = await failure(operator.recordResult({ requestId: "ts-invalid", dataId: campaign * 10n + 3n,
    detectId: campaign, userId: 0n, projectId: 3n, schoolId: SCHOOL, grade: 13, result: "2.21", unit: "m" }, opts));
  assert.equal(err.code, Code.InvalidArgument);
  assert.equal(errorReason(err), ErrorReason.FIELD_VIOLATION);
  const violations = fieldViolations(err);
  assert.deepEqual(violations.map((v) => v.field).sort(), ["grade", "user_id"]);
  assert.ok(violations.every((v) => v.description !== ""), JSON.stringify(violations));
});

test("a missing result is RESULT_NOT_FOUND, a missing token UNAUTHENTICATED", async () => {
  const missing = await failure(operator.getResult({ schoolId: SCHOOL, dataId: freshCampaign() * 10n + 4n }, opts));
  assert.deepEqual([missing.code, errorReason(missing)], [Code.NotFound, ErrorReason.RESULT_NOT_FOUND]);
  const denied = await failure(anonymous.getResult({ schoolId: SCHOOL, dataId: 1n }, opts));
  assert.deepEqual([denied.code, errorReason(denied)], [Code.Unauthenticated, ErrorReason.UNAUTHENTICATED]);
});

/** A ConnectError as one read from the wire, with hand-made google.rpc details. */
function failed(code: Code, ...details: { type: string; value: Uint8Array }[]): ConnectError {
  const err = new ConnectError("hand-made", code);
  err.details.push(...details);
  return err;
}

function errorInfo(reason: string, domain: string) {
  const value = new BinaryWriter().tag(1, WireType.LengthDelimited).string(reason)
    .tag(2, WireType.LengthDelimited).string(domain).finish();
  return { type: "google.rpc.ErrorInfo", value };
}

test("RetryInfo's delay, and reasons this client does not know", () => {
  const retryInfo = new BinaryWriter().tag(1, WireType.LengthDelimited).fork()
    .tag(1, WireType.Varint).int64(1).tag(2, WireType.Varint).int32(50_000_000).join().finish();
  const contention = failed(Code.Aborted, errorInfo("CONTENTION", DOMAIN), { type: "google.rpc.RetryInfo", value: retryInfo });
  assert.equal(errorReason(contention), ErrorReason.CONTENTION);
  assert.equal(retryDelayMs(contention), 1050);
  // A reason a newer server may add, another domain's reason, no ErrorInfo,
  // not a ConnectError: unspecified (the caller goes by the code).
  for (const err of [
    failed(Code.Unavailable, errorInfo("SOMETHING_NEW", DOMAIN)),
    failed(Code.Aborted, errorInfo("VERSION_CONFLICT", "example.com")),
    failed(Code.Internal),
    new Error("not an RPC"),
  ]) {
    assert.equal(errorReason(err), ErrorReason.ERROR_REASON_UNSPECIFIED);
    assert.equal(retryDelayMs(err), undefined);
  }
});

// The TypeScript client over mutual TLS against the TLS results server that
// deploy/local/test-clients.sh starts (RS_RESULTS_TLS_ADDR, the local CA in
// RS_TLS_DIR, a second CA in RS_TLS_OTHER_DIR), and the refusals: a client
// that does not trust the CA, one without a client certificate, one whose
// certificate another CA signed, and plaintext. A missing setting or server
// fails the test (never a skip).
import assert from "node:assert/strict";
import { test } from "node:test";

import type { TlsFiles } from "../index.js";
import { Code, ConnectError, createClient, result, transport } from "../index.js";

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set (deploy/local/test-clients.sh sets it and starts the TLS results server)`);
  return v;
}

const addr = env("RS_RESULTS_TLS_ADDR");
const ca = env("RS_TLS_DIR");
const other = env("RS_TLS_OTHER_DIR");
const mine = { certFile: `${ca}/client.pem`, keyFile: `${ca}/client-key.pem` };
const opts = { timeoutMs: 10_000 };

test("record and read over mutual TLS", async () => {
  const results = createClient(
    result.ResultService,
    transport(`https://${addr}`, { token: "dev-operator", tls: { caFile: `${ca}/ca.pem`, ...mine } }),
  );
  const dataId = 9_100_000_000_000n + BigInt(Date.now() % 1_000_000_000);
  await results.recordResult(
    { requestId: `ts-tls-${dataId}`, dataId, detectId: dataId / 10n, userId: 41n, projectId: 3n, schoolId: 8n, grade: 5, result: "2.21", unit: "m" },
    opts,
  );
  const got = (await results.getResult({ schoolId: 8n, dataId }, opts)).result!;
  assert.deepEqual([got.dataId, got.version, got.result], [dataId, 1n, "2.21"]);
});

// Connect reports a failed handshake as INTERNAL with the TLS library's
// reason (not UNAVAILABLE as grpc-go, grpc-python and grpc-java do), and a
// plaintext call to a TLS server as CANCELED (the server closes it).
const refusals: [string, string, TlsFiles | undefined, Code, RegExp][] = [
  ["the system roots do not know the local CA", "https", { ...mine }, Code.Internal, /unable to verify/],
  ["another CA does not verify the server", "https", { caFile: `${other}/ca.pem`, ...mine }, Code.Internal, /unable to verify/],
  ["no client certificate", "https", { caFile: `${ca}/ca.pem` }, Code.Internal, /certificate required/],
  [
    "a client certificate another CA signed",
    "https",
    { caFile: `${ca}/ca.pem`, certFile: `${other}/client.pem`, keyFile: `${other}/client-key.pem` },
    Code.Internal,
    /bad certificate/,
  ],
  ["plaintext", "http", undefined, Code.Canceled, /stream closed/],
];

for (const [why, scheme, tls, code, reason] of refusals) {
  test(`refused: ${why}`, async () => {
    const results = createClient(result.ResultService, transport(`${scheme}://${addr}`, { token: "dev-viewer", tls }));
    const err = await results.listResults({ detectId: 1n, pageSize: 1 }, opts).then(
      () => assert.fail(`${why}: the call succeeded`),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(err.code, code, `${why}: ${err.message}`);
    assert.match(err.rawMessage, reason, why);
  });
}

// transport()'s default retries (retrying(serviceConfig), the canonical
// clients/go/serviceconfig/service_config.json shipped in the package): a
// method safe to send again is retried on UNAVAILABLE, one that is not is
// sent once. Against an in-process gRPC server (Connect's Node adapter)
// that answers UNAVAILABLE twice per method, then succeeds.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { Code, createClient, repair, result, serviceConfig, transport } from "../index.js";

const calls = new Map<string, number>();
function flaky(method: string) {
  const n = (calls.get(method) ?? 0) + 1;
  calls.set(method, n);
  if (n <= 2) throw new ConnectError(`${method}: failure ${n}`, Code.Unavailable);
}

let server: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let url = "";
before(async () => {
  const handler = connectNodeAdapter({
    grpc: true,
    routes: (router) => {
      router.service(result.ResultService, {
        getResult(req) {
          flaky("GetResult");
          return { result: { dataId: req.dataId, version: 1n } };
        },
      });
      router.service(repair.RepairService, {
        approveRepair() {
          flaky("ApproveRepair");
          return {};
        },
      });
    },
  });
  server = http2.createServer(handler);
  server.on("session", (s) => sessions.add(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  // The clients' transports keep their HTTP/2 sessions open: end them, or
  // the server (and the test process) stays up.
  for (const s of sessions) s.destroy();
  server.close();
});

test("the service config is read from the package's service_config.json", () => {
  const shipped = JSON.parse(readFileSync(new URL("../../src/service_config.json", import.meta.url), "utf8"));
  assert.deepEqual(serviceConfig, shipped); // test/contract checks it equals the canonical file
  const names = (serviceConfig.methodConfig ?? []).flatMap((mc) => mc.name ?? []);
  assert.ok(names.some((n) => n.service === "fitness.v1.ResultService" && n.method === "GetResult"));
  assert.ok(!names.some((n) => n.service === "fitness.v1.RepairService" && n.method === "ApproveRepair"));
});

test("a safe method is retried on UNAVAILABLE", async () => {
  calls.clear();
  const results = createClient(result.ResultService, transport(url, { token: "dev-viewer" }));
  const got = await results.getResult({ schoolId: 8n, dataId: 7n }, { timeoutMs: 20_000 });
  assert.equal(got.result?.dataId, 7n);
  assert.equal(calls.get("GetResult"), 3); // two UNAVAILABLE, then the answer
});

test("an unsafe method is sent once", async () => {
  calls.clear();
  const repairs = createClient(repair.RepairService, transport(url, { token: "dev-admin" }));
  const err = await repairs.approveRepair({ repairId: "r-1" }, { timeoutMs: 20_000 }).then(
    () => assert.fail("ApproveRepair succeeded"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(err.code, Code.Unavailable);
  assert.equal(calls.get("ApproveRepair"), 1);
});

test("without the service config nothing is retried", async () => {
  calls.clear();
  const results = createClient(result.ResultService, transport(url, { token: "dev-viewer", serviceConfig: false }));
  const err = await results.getResult({ schoolId: 8n, dataId: 7n }, { timeoutMs: 20_000 }).then(
    () => assert.fail("GetResult succeeded"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(err.code, Code.Unavailable);
  assert.equal(calls.get("GetResult"), 1);
});

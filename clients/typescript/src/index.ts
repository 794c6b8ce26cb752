/**
 * Typed TypeScript client of resultsync's gRPC APIs.
 *
 * The generated messages and service descriptors are in `./gen/fitness/v1/`
 * (protoc-gen-es); clients come from Connect (`createClient(ResultService,
 * transport)`) over the gRPC protocol the servers speak. This module adds:
 *
 * - {@link transport}: a gRPC transport (HTTP/2, plaintext unless the URL is
 *   https) whose every call carries `authorization: Bearer <token>`, over
 *   TLS with a private CA and a client certificate (mutual TLS) when given
 *   {@link TlsFiles};
 * - {@link bearer}: that interceptor, for a transport of your own;
 * - {@link versionConflict}: the typed `VersionConflict` detail of an
 *   ABORTED correction or deletion.
 */
import type { Client, Interceptor, Transport } from "@connectrpc/connect";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { readFileSync } from "node:fs";

import { ReconcileService } from "./gen/fitness/v1/reconcile_pb.js";
import { RepairService } from "./gen/fitness/v1/repair_pb.js";
import type { VersionConflict } from "./gen/fitness/v1/result_pb.js";
import { ResultService, VersionConflictSchema } from "./gen/fitness/v1/result_pb.js";

export * as outbox from "./gen/fitness/v1/outbox_pb.js";
export * as projection from "./gen/fitness/v1/projection_pb.js";
export * as reconcile from "./gen/fitness/v1/reconcile_pb.js";
export * as repair from "./gen/fitness/v1/repair_pb.js";
export * as result from "./gen/fitness/v1/result_pb.js";
export { Code, ConnectError, createClient };

/** An interceptor that sends `authorization: Bearer <token>` with every call. */
export function bearer(token: string): Interceptor {
  return (next) => async (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** Options of {@link transport}. */
export interface TransportOptions {
  /** The bearer token (viewer, operator or admin); none: calls are unauthenticated. */
  token?: string;
  /** More interceptors, run after the token's. */
  interceptors?: Interceptor[];
  /** TLS settings of an https:// URL (none: the system roots, no client certificate). */
  tls?: TlsFiles;
}

/**
 * The PEM files of a TLS connection, read when the transport is made (a
 * transport made after a certificate is renewed uses the new one).
 */
export interface TlsFiles {
  /** CA certificates that verify the server (a private CA; none: the system roots). */
  caFile?: string;
  /** The client certificate presented to a server that requires one (mutual TLS), with keyFile. */
  certFile?: string;
  /** The private key of certFile. */
  keyFile?: string;
}

/**
 * A gRPC transport to one resultsync server, e.g.
 * `transport("http://127.0.0.1:7101", { token: "dev-operator" })`.
 * http:// is plaintext HTTP/2 (h2c, the local stack); https:// is TLS, with
 * `tls` naming a private CA and a client certificate.
 */
export function transport(baseUrl: string, opts: TransportOptions = {}): Transport {
  const interceptors = [...(opts.token ? [bearer(opts.token)] : []), ...(opts.interceptors ?? [])];
  const tls = opts.tls;
  if (tls === undefined) {
    return createGrpcTransport({ baseUrl, interceptors });
  }
  if (!baseUrl.startsWith("https://")) {
    throw new Error(`TLS settings need an https:// URL, not ${baseUrl}`);
  }
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new Error("certFile and keyFile go together (mutual TLS needs both)");
  }
  const read = (f?: string) => (f === undefined ? undefined : readFileSync(f));
  const nodeOptions = { ca: read(tls.caFile), cert: read(tls.certFile), key: read(tls.keyFile) };
  return createGrpcTransport({ baseUrl, interceptors, nodeOptions });
}

/** The three services other platform services call most, on one transport each. */
export interface Clients {
  results: Client<typeof ResultService>;
  reconcile: Client<typeof ReconcileService>;
  repair: Client<typeof RepairService>;
}

/** Clients of the results, reconcile and repair servers, all with one token. */
export function clients(urls: { results: string; reconcile: string; repair: string }, token?: string): Clients {
  return {
    results: createClient(ResultService, transport(urls.results, { token })),
    reconcile: createClient(ReconcileService, transport(urls.reconcile, { token })),
    repair: createClient(RepairService, transport(urls.repair, { token })),
  };
}

/**
 * The `VersionConflict` of an ABORTED correction or deletion (the version the
 * caller expected and the record's current one), or undefined when `err`
 * is another error.
 */
export function versionConflict(err: unknown): VersionConflict | undefined {
  const e = ConnectError.from(err);
  if (e.code !== Code.Aborted) {
    return undefined;
  }
  return e.findDetails(VersionConflictSchema)[0];
}

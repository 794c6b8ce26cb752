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
 * - {@link retrying}: the retries of resultsync's gRPC service config
 *   ({@link serviceConfig}), which {@link transport} applies by default;
 * - {@link versionConflict}: the typed `VersionConflict` detail of an
 *   ABORTED correction or deletion;
 * - {@link errorReason}: an error's reason as the typed `ErrorReason` (the
 *   proto enum `fitness.v1.ErrorReason`), from its `google.rpc.ErrorInfo`;
 *   {@link retryDelayMs}: its `RetryInfo` delay; {@link fieldViolations}:
 *   its `BadRequest` field violations.
 */
import type { Client, Interceptor, Transport } from "@connectrpc/connect";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { readFileSync } from "node:fs";

import { ErrorReason, ErrorReasonSchema } from "./gen/fitness/v1/errors_pb.js";

import { ReconcileService } from "./gen/fitness/v1/reconcile_pb.js";
import { RepairService } from "./gen/fitness/v1/repair_pb.js";
import type { VersionConflict } from "./gen/fitness/v1/result_pb.js";
import { ResultService, VersionConflictSchema } from "./gen/fitness/v1/result_pb.js";

export * as errors from "./gen/fitness/v1/errors_pb.js";
export * as outbox from "./gen/fitness/v1/outbox_pb.js";
export * as projection from "./gen/fitness/v1/projection_pb.js";
export * as reconcile from "./gen/fitness/v1/reconcile_pb.js";
export * as repair from "./gen/fitness/v1/repair_pb.js";
export * as result from "./gen/fitness/v1/result_pb.js";
export { Code, ConnectError, createClient, ErrorReason };

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
  /**
   * The gRPC service config whose retryPolicy the transport applies
   * ({@link retrying}); {@link serviceConfig} unless given; false: none.
   */
  serviceConfig?: ServiceConfig | false;
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
 * `tls` naming a private CA and a client certificate. Unary calls of the
 * methods safe to repeat are retried on UNAVAILABLE by resultsync's service
 * config ({@link retrying}; `serviceConfig: false` turns it off).
 */
export function transport(baseUrl: string, opts: TransportOptions = {}): Transport {
  const retries = opts.serviceConfig === false ? [] : [retrying(opts.serviceConfig ?? serviceConfig)];
  const interceptors = [...retries, ...(opts.token ? [bearer(opts.token)] : []), ...(opts.interceptors ?? [])];
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

/** The `google.rpc.ErrorInfo` domain of every resultsync error. */
export const DOMAIN = "resultsync.fitness.v1";

/** One invalid field of a FIELD_VIOLATION error (`google.rpc.BadRequest.FieldViolation`). */
export interface FieldViolation {
  /** The field's name, e.g. `grade` or `scope.detect_id`. */
  field: string;
  /** What is wrong with it. */
  description: string;
}

/**
 * The reason of `err` as the typed `ErrorReason`: the `google.rpc.ErrorInfo`
 * of domain {@link DOMAIN} the server attached, mapped by name
 * (`ErrorReason.VERSION_CONFLICT`, ...). `ErrorReason.ERROR_REASON_UNSPECIFIED`
 * when the error carries none or a reason this client does not know yet:
 * treat it by its code.
 */
export function errorReason(err: unknown): ErrorReason {
  for (const info of detailFields(err, "google.rpc.ErrorInfo")) {
    // ErrorInfo: reason = 1, domain = 2.
    if (text(info, 2) === DOMAIN) {
      const reason = text(info, 1);
      return ErrorReasonSchema.values.find((v) => v.name === reason)?.number ?? ErrorReason.ERROR_REASON_UNSPECIFIED;
    }
  }
  return ErrorReason.ERROR_REASON_UNSPECIFIED;
}

/**
 * How long to wait, in milliseconds, before sending the same request again
 * (the `google.rpc.RetryInfo` of a CONTENTION, REQUEST_IN_PROGRESS,
 * UNAVAILABLE or RESOURCE_EXHAUSTED error; double it on each further
 * failure), or undefined when the server gave none.
 */
export function retryDelayMs(err: unknown): number | undefined {
  for (const info of detailFields(err, "google.rpc.RetryInfo")) {
    // RetryInfo: retry_delay = 1, a google.protobuf.Duration (seconds = 1, nanos = 2).
    const delay = info.get(1)?.at(-1);
    if (delay instanceof Uint8Array) {
      const d = fields(delay);
      return Number(varint(d, 1)) * 1000 + Number(varint(d, 2)) / 1e6;
    }
  }
  return undefined;
}

/** The invalid fields of a FIELD_VIOLATION error (its `google.rpc.BadRequest`); empty for another error. */
export function fieldViolations(err: unknown): FieldViolation[] {
  // BadRequest: field_violations = 1 (FieldViolation: field = 1, description = 2).
  return detailFields(err, "google.rpc.BadRequest").flatMap((bad) =>
    (bad.get(1) ?? []).flatMap((v) => {
      if (!(v instanceof Uint8Array)) return [];
      const f = fields(v);
      return [{ field: text(f, 1), description: text(f, 2) }];
    }),
  );
}

// The google.rpc error details are decoded from their wire form: the few
// fields read here (stable since google.rpc's first release) need no
// generated code of googleapis in this package.
type Fields = Map<number, (Uint8Array | bigint)[]>;

function detailFields(err: unknown, typeName: string): Fields[] {
  return ConnectError.from(err).details.flatMap((d) =>
    "type" in d && d.type === typeName ? [fields(d.value)] : [],
  );
}

function fields(bytes: Uint8Array): Fields {
  const out: Fields = new Map();
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    let v: Uint8Array | bigint;
    if (wt === WireType.LengthDelimited) {
      v = r.bytes();
    } else if (wt === WireType.Varint) {
      v = BigInt(r.int64());
    } else {
      r.skip(wt, no);
      continue;
    }
    out.set(no, [...(out.get(no) ?? []), v]);
  }
  return out;
}

function text(f: Fields, no: number): string {
  const v = f.get(no)?.at(-1);
  return v instanceof Uint8Array ? new TextDecoder().decode(v) : "";
}

function varint(f: Fields, no: number): bigint {
  const v = f.get(no)?.at(-1);
  return typeof v === "bigint" ? v : 0n;
}

/** A gRPC service config (https://github.com/grpc/grpc/blob/master/doc/service_config.md), the parts read here. */
export interface ServiceConfig {
  methodConfig?: {
    name?: { service?: string; method?: string }[];
    retryPolicy?: RetryPolicy;
  }[];
  retryThrottling?: { maxTokens: number; tokenRatio: number };
  loadBalancingConfig?: unknown[];
}

/** gRPC's retryPolicy: durations as "0.5s", codes by name ("UNAVAILABLE") or number. */
export interface RetryPolicy {
  maxAttempts: number;
  initialBackoff: string;
  maxBackoff: string;
  backoffMultiplier: number;
  retryableStatusCodes: (string | number)[];
}

/**
 * resultsync's gRPC service config: the canonical
 * clients/go/serviceconfig/service_config.json, shipped in this package as
 * `src/service_config.json` (generate.sh copies it). Its retryPolicy covers
 * the reads and the writes whose request_id makes a repeat safe.
 */
export const serviceConfig: ServiceConfig = JSON.parse(
  readFileSync(new URL("../src/service_config.json", import.meta.url), "utf8"),
) as ServiceConfig;

/**
 * An interceptor that applies the retryPolicy and retryThrottling of a gRPC
 * service config to unary calls, as gRPC's own clients do (Connect has no
 * service configs): a call whose method the policy names and that fails
 * with one of its retryable codes is sent again, at most maxAttempts times
 * in all (capped at 5), after a random wait of up to initialBackoff, then
 * up to backoffMultiplier times more each time (at most maxBackoff), within
 * the call's own deadline; while more than half of the throttling tokens
 * are spent (a retryable failure costs 1, a success earns tokenRatio), no
 * call is retried. Streams are not retried. The service config's
 * loadBalancingConfig does not apply: a Connect transport sends to one
 * address.
 */
export function retrying(config: ServiceConfig = serviceConfig): Interceptor {
  const policies = new Map<string, RetryPolicy>();
  for (const mc of config.methodConfig ?? []) {
    for (const n of mc.name ?? [{}]) {
      if (mc.retryPolicy) policies.set(`${n.service ?? ""}/${n.method ?? ""}`, mc.retryPolicy);
    }
  }
  const throttling = config.retryThrottling;
  let tokens = throttling?.maxTokens ?? 0;
  const spend = (ok: boolean) => {
    if (throttling) tokens = ok ? Math.min(throttling.maxTokens, tokens + throttling.tokenRatio) : Math.max(0, tokens - 1);
  };
  return (next) => async (req) => {
    const service = req.method.parent.typeName;
    const policy = req.stream
      ? undefined
      : (policies.get(`${service}/${req.method.name}`) ?? policies.get(`${service}/`) ?? policies.get("/"));
    if (!policy) return next(req);
    const retryable = new Set(policy.retryableStatusCodes.map(codeOf));
    const attempts = Math.min(policy.maxAttempts, 5);
    let backoff = seconds(policy.initialBackoff);
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await next(req);
        spend(true);
        return res;
      } catch (e) {
        const code = ConnectError.from(e).code;
        if (!retryable.has(code)) throw e;
        spend(false);
        if (attempt >= attempts || (throttling && tokens <= throttling.maxTokens / 2) || req.signal.aborted) throw e;
        await sleep(Math.random() * backoff * 1000, req.signal);
        backoff = Math.min(backoff * policy.backoffMultiplier, seconds(policy.maxBackoff));
      }
    }
  };
}

/** A status code of a service config ("UNAVAILABLE", "CANCELLED", 14) as Connect's Code. */
function codeOf(c: string | number): Code {
  if (typeof c === "number") return c as Code;
  if (c === "CANCELLED") return Code.Canceled;
  const name = c.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, ch: string) => ch.toUpperCase());
  const code = (Code as unknown as Record<string, Code | undefined>)[name];
  if (code === undefined) throw new Error(`unknown status code ${c} in the service config`);
  return code;
}

/** A duration of a service config ("0.5s") in seconds. */
function seconds(d: string): number {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(d);
  if (!m) throw new Error(`bad duration ${d} in the service config`);
  return Number(m[1]);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

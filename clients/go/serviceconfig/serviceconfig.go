// Package serviceconfig holds resultsync's gRPC service configuration, the
// one canonical file service_config.json that every client ships (the Go
// client embeds it here; the Python, TypeScript and Java clients carry a
// copy) and the gateway dials its backends with:
//
//   - loadBalancingConfig round_robin: a connection keeps a subchannel to
//     every address its target resolves to (dns:///host:port: every ready
//     pod behind a headless Service) and spreads the calls over them;
//   - a retryPolicy for the methods that are safe to send again: the reads
//     (Get*, List*, PlanRepair, the Watch streams before their first
//     message) and the writes whose request_id is required (RecordResult,
//     CorrectResult, DeleteResult, CreateRepair, StartRebuild: the server
//     answers a repeated request_id with the first outcome). Up to 4
//     attempts, on UNAVAILABLE only, with gRPC's jittered exponential
//     backoff (0.5 s, doubling, at most 5 s); a call is never retried once
//     the server has sent its first response (a Watch stream that ends
//     with UNAVAILABLE after its maximum duration is called again by the
//     application);
//   - retryThrottling: once more than half of 100 tokens are spent (each
//     failed attempt costs 1, each success earns 0.1 back), retries stop
//     until successes earn them back, so a backend that is down is not
//     sent four times the calls.
//
// docs/calling.md explains the choice per method; the package's test keeps
// the list of retried methods equal to a decision for every method of the
// contracts.
package serviceconfig

import _ "embed"

// JSON is service_config.json: pass it to grpc.WithDefaultServiceConfig.
//
//go:embed service_config.json
var JSON string

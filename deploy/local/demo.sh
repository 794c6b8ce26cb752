#!/usr/bin/env bash
# Shows the running platform: every server's health over gRPC, the services
# each exposes (by reflection, no proto files), the JSON gateway, and how to
# reach everything.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
# grpcurl and curl of the servers: plaintext, or with RS_TLS=1 the local CA and client
# certificate (lib.sh GRPCURL_TLS, CURL_TLS); the gateway's JSON API is then HTTPS.
G="$RS_ROOT/bin/grpcurl ${GRPCURL_TLS[*]}"
API=$HTTP_SCHEME://$RS_GATEWAY_API_ADDR
# The documented development tokens (see README): dev-viewer, dev-operator, dev-admin.
OP=(-H "authorization: Bearer dev-operator")
# rsctl, the operator CLI (make build; bin/rsctl --help): the servers' addresses from
# env.sh (RS_RESULTS_ADDR ...), with RS_TLS=1 the local CA and client certificate.
RSCTL=("$RS_ROOT/bin/rsctl")
if [ "${RS_TLS:-0}" = 1 ]; then
  RSCTL+=(--tls-ca-file "$RS_TLS_DIR/ca.pem" --tls-cert-file "$RS_TLS_DIR/client.pem" --tls-key-file "$RS_TLS_DIR/client-key.pem")
fi
# sql DATABASE QUERY: through the script of the engine the stack runs on (RS_MYSQL_ENGINE).
sql() { "$RS_ROOT/deploy/local/$RS_MYSQL_ENGINE.sh" sql "$@"; }
# Both shards' outboxes, whichever shard owns the record.
outbox_of() {
  echo "SELECT 'shard-0' AS shard, $2 FROM rs_shard_0.outbox_event WHERE data_id = $1
        UNION ALL SELECT 'shard-1', $2 FROM rs_shard_1.outbox_event WHERE data_id = $1 ORDER BY 1, 2"
}

echo
echo "== shard and control engine: $(sql rs_control "SELECT VERSION() AS version" 2>/dev/null | grep -o '[0-9][0-9.]*[^ |]*' | head -1) ($RS_MYSQL_ENGINE)"

echo
echo "== health of the six servers (grpc.health.v1.Health/Check)"
"$(dirname "$0")/servers.sh" status

echo
echo "== services by reflection: $G $RS_RESULTS_ADDR list"
$G $RS_RESULTS_ADDR list

echo
echo "== gateway: curl -s ${CURL_TLS[*]} $API/healthz"
curl -s "${CURL_TLS[@]}" "$API/healthz"

echo
echo "== the canonical story over gRPC: record a standing long jump of 2.21 m, then correct it to 2.31 m"
echo "   (fixed request ids: running the demo again returns the same outcomes, nothing new is written)"
set -x
$G "${OP[@]}" -d '{"request_id":"demo-record-900001","data_id":900001,"detect_id":10001,"user_id":4,"project_id":3,"school_id":7,"grade":5,"result":"2.21","unit":"m"}' \
  $RS_RESULTS_ADDR fitness.v1.ResultService/RecordResult
$G "${OP[@]}" -d '{"request_id":"demo-correct-900001-v2","school_id":7,"data_id":900001,"expected_version":1,"result":"2.31","unit":"m","reason":"teacher correction"}' \
  $RS_RESULTS_ADDR fitness.v1.ResultService/CorrectResult
curl -s "${CURL_TLS[@]}" -H "authorization: Bearer dev-viewer" "$API/v1/schools/7/results/900001"; echo
{ set +x; } 2>/dev/null
echo
echo "== a stale correction is refused with the current version (ABORTED + fitness.v1.VersionConflict)"
$G "${OP[@]}" -d '{"request_id":"demo-stale","school_id":7,"data_id":900001,"expected_version":1,"result":"2.41","unit":"m"}' \
  $RS_RESULTS_ADDR fitness.v1.ResultService/CorrectResult 2>&1 || true
echo
echo "== the outbox of the owning shard holds one event per version; the relay publishes them to Pulsar (SENT)"
for _ in $(seq 1 50); do
  sent=$(sql rs_control "SELECT COUNT(*) AS n FROM ($(outbox_of 900001 "status")) o WHERE status = 'SENT'" 2>/dev/null | grep -o '[0-9]\+' | tail -1)
  [ "${sent:-0}" -ge 2 ] && break
  sleep 0.2
done
sql rs_control "$(outbox_of 900001 "version, event_id, status, attempts, sent_time")" 2>/dev/null \
  || echo "($RS_MYSQL_ENGINE.sh sql unavailable)"
echo
echo "== relay administration: $G -H 'authorization: Bearer dev-viewer' $RS_RELAY_ADDR fitness.v1.OutboxService/GetOutboxStats"
$G -H "authorization: Bearer dev-viewer" $RS_RELAY_ADDR fitness.v1.OutboxService/GetOutboxStats

echo
echo "== the consumer applied both versions to ClickHouse; the campaign report (current state: latest version, tombstones excluded)"
CH="clickhouse-client $(ch_client_tls_args | tr '\n' ' ')-d $RS_CH_DATABASE"
for _ in $(seq 1 50); do
  v=$($CH -q "SELECT version FROM fitness_result_current WHERE data_id = 900001" 2>/dev/null || true)
  [ "$v" = 2 ] && break
  sleep 0.2
done
echo "physical versions of 900001:"
$CH -q "SELECT data_id, version, toString(result) AS result, event_id FROM fitness_result_versions WHERE data_id = 900001 ORDER BY version FORMAT PrettyCompactNoEscapes"
echo "report_campaign_project for campaign 10001:"
$CH -q "SELECT project_id, unit, results, toString(mean_result) AS mean, toString(min_result) AS min, toString(max_result) AS max FROM report_campaign_project WHERE detect_id = 10001 FORMAT PrettyCompactNoEscapes"
echo
echo "== projection lag: $G -H 'authorization: Bearer dev-viewer' $RS_CONSUMER_ADDR fitness.v1.ProjectionService/GetProjectionStatus"
$G -H "authorization: Bearer dev-viewer" $RS_CONSUMER_ADDR fitness.v1.ProjectionService/GetProjectionStatus

echo
echo "== reconcile campaign 10001 at CONTENT depth (authoritative shards vs ClickHouse) with rsctl: --wait follows the run"
echo "+ bin/rsctl --token dev-operator reconcile start --detect-id 10001 --depth content --wait"
out=$("${RSCTL[@]}" --token dev-operator -o json reconcile start --detect-id 10001 --depth content --wait)
run=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["runId"])' <<<"$out")
echo "+ bin/rsctl --token dev-viewer runs get $run"
"${RSCTL[@]}" --token dev-viewer runs get "$run"
echo "+ bin/rsctl --token dev-viewer discrepancies list $run"
"${RSCTL[@]}" --token dev-viewer discrepancies list "$run"

"$(dirname "$0")/demo-repair.sh"

if [ "$RS_TLS" = 1 ]; then
  tls_note="  every hop above runs over TLS from the local CA in $RS_TLS_DIR (RS_TLS=1; docs/security.md):
  the servers require a client certificate of it (grpcurl -cacert/-cert/-key, curl --cacert/--cert/--key)
"
else
  tls_note=""
fi
cat <<EOT

== the platform is up
  results    grpc $RS_RESULTS_ADDR   fitness.v1.ResultService
  relay      grpc $RS_RELAY_ADDR   fitness.v1.OutboxService
  consumer   grpc $RS_CONSUMER_ADDR   fitness.v1.ProjectionService
  reconcile  grpc $RS_RECONCILE_ADDR   fitness.v1.ReconcileService
  repair     grpc $RS_REPAIR_ADDR   fitness.v1.RepairService
  gateway    $HTTP_SCHEME $RS_GATEWAY_API_ADDR  JSON API, /openapiv2/, /healthz  (grpc health $RS_GATEWAY_ADDR)
  metrics    $HTTP_SCHEME://127.0.0.1:<port>/metrics (ports $((RS_SERVERS_PORT_BASE + 101))..$((RS_SERVERS_PORT_BASE + 106)))
  $RS_MYSQL_ENGINE      127.0.0.1:$RS_MYSQL_PORT (rs_shard_0, rs_shard_1, rs_control; user resultsync)
  ClickHouse 127.0.0.1:$RS_CH_PORT native, :$RS_CH_SECURE_PORT native over TLS, :$RS_CH_HTTP_PORT HTTP (database $RS_CH_DATABASE)
  Pulsar     pulsar://127.0.0.1:$RS_PULSAR_PORT, $RS_PULSAR_TLS_URL, admin http://127.0.0.1:$RS_PULSAR_WEB_PORT, $RS_PULSAR_ADMIN_TLS_URL
$tls_note
Try:
  bin/rsctl --token dev-viewer runs list --detect-id 10001          (bin/rsctl --help: every command)
  bin/grpcurl ${GRPCURL_TLS[*]} $RS_RESULTS_ADDR grpc.health.v1.Health/Check
  bin/grpcurl ${GRPCURL_TLS[*]} $RS_RESULTS_ADDR describe fitness.v1.ResultService
  bin/grpcurl ${GRPCURL_TLS[*]} -H 'authorization: Bearer dev-viewer' -d '{"detect_id": 10001}' $RS_RESULTS_ADDR fitness.v1.ResultService/ListResults
  bin/grpcurl ${GRPCURL_TLS[*]} -H 'authorization: Bearer dev-viewer' $RS_RELAY_ADDR fitness.v1.OutboxService/GetOutboxStats
Logs: $RS_STATE/logs/   Stop: make stop   Stop and wipe: make down
EOT

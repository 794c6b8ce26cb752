"""The Python client against the running resultsync servers.

Addresses come from RS_RESULTS_ADDR, RS_RECONCILE_ADDR and RS_REPAIR_ADDR
(the local stack's ports by default; deploy/local/test-clients.sh sets
them). Every test works on a fresh campaign, so reruns and other tests do
not interfere. A server that does not answer fails the test (never a skip).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time

import grpc
import pytest

from resultsync_client.fitness.v1 import reconcile_pb2, repair_pb2, result_pb2
from resultsync_client import (
    ReconcileServiceStub,
    RepairServiceStub,
    ResultServiceStub,
    connect,
    version_conflict,
)

RESULTS = os.environ.get("RS_RESULTS_ADDR", "127.0.0.1:7101")
RECONCILE = os.environ.get("RS_RECONCILE_ADDR", "127.0.0.1:7104")
REPAIR = os.environ.get("RS_REPAIR_ADDR", "127.0.0.1:7105")
SCHOOL = 8
TIMEOUT = 10.0  # seconds, per unary call

TERMINAL_RUN = {
    reconcile_pb2.RUN_STATE_SUCCEEDED,
    reconcile_pb2.RUN_STATE_FAILED,
    reconcile_pb2.RUN_STATE_BOUNDARY_NOT_REACHED,
}


def fresh_campaign() -> int:
    """A campaign id no other run uses (python client range: 8e12 + ...)."""
    return 8_000_000_000_000 + (time.time_ns() // 1_000_000 % 10**9) * 100 + random.randrange(100)


def record(results: ResultServiceStub, campaign: int, data_id: int, value: str) -> result_pb2.FitnessResult:
    resp = results.RecordResult(
        result_pb2.RecordResultRequest(
            request_id=f"py-{data_id}", data_id=data_id, detect_id=campaign, user_id=41, project_id=3,
            school_id=SCHOOL, grade=5, result=value, unit="m",
        ),
        timeout=TIMEOUT,
    )
    return resp.result


@pytest.fixture(scope="module")
def operator():
    with connect(RESULTS, token="dev-operator") as ch:
        yield ResultServiceStub(ch)


@pytest.fixture(scope="module")
def viewer():
    with connect(RESULTS, token="dev-viewer") as ch:
        yield ResultServiceStub(ch)


def test_record_then_correct_with_the_version_read(operator, viewer):
    campaign = fresh_campaign()
    data_id = campaign * 10 + 1
    recorded = record(operator, campaign, data_id, "2.21")
    assert recorded.version == 1 and recorded.result == "2.21"

    got = viewer.GetResult(result_pb2.GetResultRequest(school_id=SCHOOL, data_id=data_id), timeout=TIMEOUT).result
    assert (got.version, got.result, got.unit) == (1, "2.21", "m")

    corrected = operator.CorrectResult(
        result_pb2.CorrectResultRequest(request_id=f"py-c-{data_id}", school_id=SCHOOL, data_id=data_id,
                                        expected_version=got.version, result="2.31", unit="m", reason="measured again"),
        timeout=TIMEOUT,
    )
    assert corrected.result.version == 2
    assert corrected.event_id == f"fitness-result-{data_id}-v2"
    again = viewer.GetResult(result_pb2.GetResultRequest(school_id=SCHOOL, data_id=data_id), timeout=TIMEOUT).result
    assert (again.version, again.result) == (2, "2.31")


def test_stale_correction_is_aborted_with_a_typed_version_conflict(operator):
    campaign = fresh_campaign()
    data_id = campaign * 10 + 2
    record(operator, campaign, data_id, "2.21")
    operator.CorrectResult(
        result_pb2.CorrectResultRequest(request_id=f"py-c1-{data_id}", school_id=SCHOOL, data_id=data_id,
                                        expected_version=1, result="2.31", unit="m", reason="first"),
        timeout=TIMEOUT,
    )
    with pytest.raises(grpc.RpcError) as caught:
        operator.CorrectResult(
            result_pb2.CorrectResultRequest(request_id=f"py-c2-{data_id}", school_id=SCHOOL, data_id=data_id,
                                            expected_version=1, result="2.41", unit="m", reason="stale"),
            timeout=TIMEOUT,
        )
    err = caught.value
    assert err.code() == grpc.StatusCode.ABORTED
    conflict = version_conflict(err)
    assert isinstance(conflict, result_pb2.VersionConflict)
    assert (conflict.data_id, conflict.expected_version, conflict.current_version) == (data_id, 1, 2)


def test_list_results_pages_through_every_record_once(operator, viewer):
    campaign = fresh_campaign()
    ids = [campaign * 10 + i for i in range(1, 6)]
    for data_id in ids:
        record(operator, campaign, data_id, "1.50")
    seen: list[int] = []
    token, pages = "", 0
    while True:
        page = viewer.ListResults(
            result_pb2.ListResultsRequest(detect_id=campaign, page_size=2, page_token=token), timeout=TIMEOUT)
        assert len(page.results) <= 2
        seen.extend(r.data_id for r in page.results)
        pages += 1
        token = page.next_page_token
        if not token:
            break
        assert pages < 10, "ListResults did not end"
    assert sorted(seen) == ids
    assert pages == 3


def test_tokens_and_roles_are_enforced(viewer):
    with connect(RESULTS) as ch:  # no token
        with pytest.raises(grpc.RpcError) as caught:
            ResultServiceStub(ch).GetResult(result_pb2.GetResultRequest(school_id=SCHOOL, data_id=1), timeout=TIMEOUT)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as caught:
        record(viewer, fresh_campaign(), 42, "1.00")
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED


def insert_stray_row(campaign: int, data_id: int) -> None:
    """Writes a projection row no shard has (a stray writer) with
    clickhouse-client, so that the reconciliation has something to find."""
    ch = shutil.which("clickhouse-client")
    assert ch, "clickhouse-client is needed to damage the projection"
    port = os.environ.get("RS_CH_PORT", "19000")
    db = os.environ.get("RS_CH_DATABASE", "resultsync")
    now_ms = time.time_ns() // 1_000_000
    subprocess.run(
        [ch, "--port", port, "-d", db, "-q",
         "INSERT INTO fitness_result_versions (detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, "
         "result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms) VALUES "
         f"({campaign}, {data_id}, 9, 3, {SCHOOL}, 5, 1, 0, 4.44, 'm', 0, 'stray-writer-{data_id}', 'shard-0', {now_ms}, {now_ms})"],
        check=True, capture_output=True, timeout=60,
    )


def watch_run(reconcile: ReconcileServiceStub, run_id: str) -> reconcile_pb2.ReconciliationRun:
    """Consumes WatchReconciliationRun until the run is terminal."""
    last = None
    for update in reconcile.WatchReconciliationRun(reconcile_pb2.WatchReconciliationRunRequest(run_id=run_id), timeout=120):
        last = update.run
        assert last.run_id == run_id
        if last.state in TERMINAL_RUN:
            return last
    raise AssertionError(f"the watch of run {run_id} ended before the run did (last: {last})")


def test_reconciliation_is_watched_and_a_repair_planned_and_read(operator):
    campaign = fresh_campaign()
    for data_id in (campaign * 10 + 1, campaign * 10 + 2):
        record(operator, campaign, data_id, "1.75")
    stray = campaign * 10 + 9
    insert_stray_row(campaign, stray)

    with connect(RECONCILE, token="dev-operator") as rch, connect(REPAIR, token="dev-operator") as pch:
        reconcile, repair = ReconcileServiceStub(rch), RepairServiceStub(pch)
        # The fresh records may still be on their way to the projection: a
        # run that cannot reach a stable boundary is started again.
        for _ in range(3):
            started = reconcile.StartReconciliationRun(
                reconcile_pb2.StartReconciliationRunRequest(scope=reconcile_pb2.ReconcileScope(detect_id=campaign),
                                                            depth=reconcile_pb2.RECONCILE_DEPTH_CONTENT),
                timeout=TIMEOUT,
            )
            run = watch_run(reconcile, started.run.run_id)
            if run.state != reconcile_pb2.RUN_STATE_BOUNDARY_NOT_REACHED:
                break
            time.sleep(1)
        assert run.state == reconcile_pb2.RUN_STATE_SUCCEEDED, run
        assert run.discrepancy_count == 1

        plan = repair.PlanRepair(repair_pb2.PlanRepairRequest(run_id=run.run_id), timeout=TIMEOUT)
        assert plan.run_id == run.run_id and plan.items_total == 1
        assert [(a.action, a.items, a.requires_approval) for a in plan.actions] == [(repair_pb2.REPAIR_ACTION_REMOVE, 1, True)]
        assert plan.items[0].data_id == stray

        created = repair.CreateRepair(
            repair_pb2.CreateRepairRequest(run_id=run.run_id, reason="python client test", request_id=f"py-{run.run_id}"),
            timeout=TIMEOUT,
        )
        assert len(created.repairs) == 1
        repair_id = created.repairs[0].repair_id
        got = repair.GetRepair(repair_pb2.GetRepairRequest(repair_id=repair_id), timeout=TIMEOUT)
        assert got.repair.repair_id == repair_id
        assert got.repair.action == repair_pb2.REPAIR_ACTION_REMOVE
        assert got.repair.state == repair_pb2.REPAIR_STATE_AWAITING_APPROVAL  # a removal waits for an admin
        assert got.transitions, "a repair records its state transitions"
        # Leave nothing active behind.
        repair.CancelRepair(repair_pb2.CancelRepairRequest(repair_id=repair_id, reason="test done"), timeout=TIMEOUT)

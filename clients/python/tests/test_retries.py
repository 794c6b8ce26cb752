"""connect()'s default service config (resultsync_client.SERVICE_CONFIG, the
canonical clients/go/serviceconfig/service_config.json): a method safe to
send again is retried on UNAVAILABLE, one that is not is sent once. Against
an in-process server that answers UNAVAILABLE a given number of times."""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent import futures
from typing import Iterator

import grpc
import pytest

from resultsync_client import SERVICE_CONFIG, RepairServiceStub, ResultServiceStub, connect
from resultsync_client.fitness.v1 import repair_pb2, result_pb2


class Flaky:
    """Counts the calls of each method; the first `failures` of each are UNAVAILABLE."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def answer(self, method: str, context: grpc.ServicerContext) -> None:
        with self._lock:
            self.calls[method] += 1
            n = self.calls[method]
        if n <= self.failures:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"{method}: failure {n}")


def handlers(flaky: Flaky) -> list[grpc.GenericRpcHandler]:
    """GetResult (retried by the service config) and ApproveRepair (not)."""

    def get_result(request: result_pb2.GetResultRequest, context: grpc.ServicerContext) -> result_pb2.GetResultResponse:
        flaky.answer("GetResult", context)
        return result_pb2.GetResultResponse(result=result_pb2.FitnessResult(data_id=request.data_id, version=1))

    def approve_repair(request: repair_pb2.ApproveRepairRequest, context: grpc.ServicerContext) -> repair_pb2.ApproveRepairResponse:
        flaky.answer("ApproveRepair", context)
        return repair_pb2.ApproveRepairResponse()

    return [
        grpc.method_handlers_generic_handler("fitness.v1.ResultService", {
            "GetResult": grpc.unary_unary_rpc_method_handler(
                get_result, request_deserializer=result_pb2.GetResultRequest.FromString,
                response_serializer=result_pb2.GetResultResponse.SerializeToString),
        }),
        grpc.method_handlers_generic_handler("fitness.v1.RepairService", {
            "ApproveRepair": grpc.unary_unary_rpc_method_handler(
                approve_repair, request_deserializer=repair_pb2.ApproveRepairRequest.FromString,
                response_serializer=repair_pb2.ApproveRepairResponse.SerializeToString),
        }),
    ]


@pytest.fixture
def flaky_server() -> Iterator[tuple[str, Flaky]]:
    flaky = Flaky(failures=2)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(handlers(flaky))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", flaky
    finally:
        server.stop(grace=None)


def test_the_service_config_is_the_canonical_one() -> None:
    cfg = json.loads(SERVICE_CONFIG)
    policy = cfg["methodConfig"][0]["retryPolicy"]
    assert policy["retryableStatusCodes"] == ["UNAVAILABLE"]
    names = {(n["service"], n.get("method")) for mc in cfg["methodConfig"] for n in mc["name"]}
    assert ("fitness.v1.ResultService", "GetResult") in names
    assert ("fitness.v1.RepairService", "ApproveRepair") not in names


def test_a_safe_method_is_retried_on_unavailable(flaky_server: tuple[str, Flaky]) -> None:
    target, flaky = flaky_server
    with connect(target, token="dev-viewer") as ch:
        got = ResultServiceStub(ch).GetResult(result_pb2.GetResultRequest(school_id=8, data_id=7), timeout=20)
    assert got.result.data_id == 7
    assert flaky.calls["GetResult"] == 3  # two UNAVAILABLE, then the answer


def test_an_unsafe_method_is_sent_once(flaky_server: tuple[str, Flaky]) -> None:
    target, flaky = flaky_server
    with connect(target, token="dev-admin") as ch:
        with pytest.raises(grpc.RpcError) as caught:
            RepairServiceStub(ch).ApproveRepair(repair_pb2.ApproveRepairRequest(repair_id="r-1"), timeout=20)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert flaky.calls["ApproveRepair"] == 1


def test_without_the_service_config_nothing_is_retried(flaky_server: tuple[str, Flaky]) -> None:
    target, flaky = flaky_server
    with connect(target, token="dev-viewer", service_config=None) as ch:
        with pytest.raises(grpc.RpcError) as caught:
            ResultServiceStub(ch).GetResult(result_pb2.GetResultRequest(school_id=8, data_id=7), timeout=20)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert flaky.calls["GetResult"] == 1

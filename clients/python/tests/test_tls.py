"""The Python client over mutual TLS against the TLS results server that
deploy/local/test-clients.sh starts (RS_RESULTS_TLS_ADDR, certificates from
the local CA in RS_TLS_DIR, a second CA in RS_TLS_OTHER_DIR), and the
refusals: a client that does not trust the CA, one without a client
certificate and one whose certificate another CA signed. A missing setting
or server fails the test (never a skip)."""

from __future__ import annotations

import os
import time

import grpc
import pytest

from resultsync_client.fitness.v1 import result_pb2
from resultsync_client import ResultServiceStub, connect, tls_credentials

TIMEOUT = 10.0


def env(name: str) -> str:
    v = os.environ.get(name)
    assert v, f"{name} is not set (deploy/local/test-clients.sh sets it and starts the TLS results server)"
    return v


ADDR = env("RS_RESULTS_TLS_ADDR")
CA_DIR = env("RS_TLS_DIR")
OTHER = env("RS_TLS_OTHER_DIR")


def pem(d: str, name: str) -> str:
    return os.path.join(d, name)


def call(creds: grpc.ChannelCredentials) -> result_pb2.ListResultsResponse:
    with connect(ADDR, token="dev-viewer", credentials=creds) as ch:
        return ResultServiceStub(ch).ListResults(result_pb2.ListResultsRequest(detect_id=1, page_size=1), timeout=TIMEOUT)


def test_record_and_read_over_mutual_tls():
    creds = tls_credentials(pem(CA_DIR, "ca.pem"), pem(CA_DIR, "client.pem"), pem(CA_DIR, "client-key.pem"))
    data_id = 8_100_000_000_000 + time.time_ns() // 1_000_000 % 10**9
    with connect(ADDR, token="dev-operator", credentials=creds) as ch:
        results = ResultServiceStub(ch)
        results.RecordResult(result_pb2.RecordResultRequest(
            request_id=f"py-tls-{data_id}", data_id=data_id, detect_id=data_id // 10, user_id=41, project_id=3,
            school_id=8, grade=5, result="2.21", unit="m"), timeout=TIMEOUT)
        got = results.GetResult(result_pb2.GetResultRequest(school_id=8, data_id=data_id), timeout=TIMEOUT).result
    assert (got.data_id, got.version, got.result) == (data_id, 1, "2.21")


@pytest.mark.parametrize(
    "why,creds",
    [
        ("the system roots do not know the local CA",
         lambda: tls_credentials(None, pem(CA_DIR, "client.pem"), pem(CA_DIR, "client-key.pem"))),
        ("another CA does not verify the server",
         lambda: tls_credentials(pem(OTHER, "ca.pem"), pem(CA_DIR, "client.pem"), pem(CA_DIR, "client-key.pem"))),
        ("no client certificate", lambda: tls_credentials(pem(CA_DIR, "ca.pem"))),
        ("a client certificate another CA signed",
         lambda: tls_credentials(pem(CA_DIR, "ca.pem"), pem(OTHER, "client.pem"), pem(OTHER, "client-key.pem"))),
    ],
)
def test_refused(why, creds):
    with pytest.raises(grpc.RpcError) as caught:
        call(creds())
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE, (why, caught.value)


def test_plaintext_is_refused():
    with connect(ADDR, token="dev-viewer") as ch:
        with pytest.raises(grpc.RpcError) as caught:
            ResultServiceStub(ch).ListResults(result_pb2.ListResultsRequest(detect_id=1, page_size=1), timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE

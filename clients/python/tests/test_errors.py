"""The typed error reason (fitness.v1.ErrorReason), RetryInfo's delay and
BadRequest's field violations, as resultsync_client decodes them: from the
running servers' errors, and from hand-made statuses for what a client
cannot provoke (a RetryInfo, a reason this client does not know)."""

from __future__ import annotations

import datetime
from typing import Any, Callable

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2

from resultsync_client.fitness.v1 import result_pb2
from resultsync_client import (
    DOMAIN,
    ErrorReason,
    ResultServiceStub,
    connect,
    error_reason,
    field_violations,
    retry_delay,
)
from test_client import RESULTS, SCHOOL, TIMEOUT, fresh_campaign, record


@pytest.fixture(scope="module")
def operator():
    with connect(RESULTS, token="dev-operator") as ch:
        yield ResultServiceStub(ch)


def call_error(fn: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        fn()
    return caught.value


def correction(data_id: int, request_id: str, expected: int, value: str) -> result_pb2.CorrectResultRequest:
    return result_pb2.CorrectResultRequest(request_id=request_id, school_id=SCHOOL, data_id=data_id,
                                           expected_version=expected, result=value, unit="m", reason="re-measured")


def test_a_stale_correction_is_version_conflict(operator):
    campaign = fresh_campaign()
    data_id = campaign * 10 + 1
    record(operator, campaign, data_id, "2.21")
    operator.CorrectResult(correction(data_id, f"py-e1-{data_id}", 1, "2.31"), timeout=TIMEOUT)
    err = call_error(lambda: operator.CorrectResult(correction(data_id, f"py-e2-{data_id}", 1, "2.41"), timeout=TIMEOUT))
    assert err.code() == grpc.StatusCode.ABORTED
    assert error_reason(err) == ErrorReason.VERSION_CONFLICT
    assert ErrorReason.Name(error_reason(err)) == "VERSION_CONFLICT"
    assert retry_delay(err) is None  # re-read, do not wait
    assert field_violations(err) == []


def test_a_reused_request_id_is_request_id_reused(operator):
    campaign = fresh_campaign()
    data_id = campaign * 10 + 2
    record(operator, campaign, data_id, "2.21")
    operator.CorrectResult(correction(data_id, f"py-e3-{data_id}", 1, "2.31"), timeout=TIMEOUT)
    # The same request_id with another request: refused, nothing done.
    err = call_error(lambda: operator.CorrectResult(correction(data_id, f"py-e3-{data_id}", 1, "2.51"), timeout=TIMEOUT))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_reason(err) == ErrorReason.REQUEST_ID_REUSED


def test_invalid_fields_are_field_violations(operator):
    err = call_error(lambda: operator.RecordResult(result_pb2.RecordResultRequest(
        request_id="py-invalid", data_id=fresh_campaign() * 10 + 3, detect_id=fresh_campaign(), user_id=0,
        project_id=3, school_id=SCHOOL, grade=13, result="2.21", unit="m"), timeout=TIMEOUT))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_reason(err) == ErrorReason.FIELD_VIOLATION
    violations = {v.field: v.description for v in field_violations(err)}
    assert set(violations) == {"user_id", "grade"}, violations
    assert all(violations.values()), violations


def test_a_missing_result_and_a_missing_token(operator):
    err = call_error(lambda: operator.GetResult(
        result_pb2.GetResultRequest(school_id=SCHOOL, data_id=fresh_campaign() * 10 + 4), timeout=TIMEOUT))
    assert (err.code(), error_reason(err)) == (grpc.StatusCode.NOT_FOUND, ErrorReason.RESULT_NOT_FOUND)
    with connect(RESULTS) as ch:  # no token
        err = call_error(lambda: ResultServiceStub(ch).GetResult(
            result_pb2.GetResultRequest(school_id=SCHOOL, data_id=1), timeout=TIMEOUT))
    assert (err.code(), error_reason(err)) == (grpc.StatusCode.UNAUTHENTICATED, ErrorReason.UNAUTHENTICATED)


class _Failed(grpc.RpcError):
    """An RpcError as a call raises it, carrying a hand-made google.rpc.Status."""

    def __init__(self, status: status_pb2.Status) -> None:
        self._status = status

    def code(self) -> grpc.StatusCode:
        return next(c for c in grpc.StatusCode if c.value[0] == self._status.code)

    def details(self) -> str:
        return str(self._status.message)

    def trailing_metadata(self) -> Any:
        return (("grpc-status-details-bin", self._status.SerializeToString()),)


def failed(code: int, *details: Message) -> _Failed:
    packed = []
    for d in details:
        a = any_pb2.Any()
        a.Pack(d)
        packed.append(a)
    return _Failed(status_pb2.Status(code=code, message="hand-made", details=packed))


def test_retry_delay_and_unknown_reasons():
    contention = failed(code_pb2.ABORTED, error_details_pb2.ErrorInfo(reason="CONTENTION", domain=DOMAIN),
                        error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=50_000_000)))
    assert error_reason(contention) == ErrorReason.CONTENTION
    assert retry_delay(contention) == datetime.timedelta(milliseconds=50)
    # A reason a newer server may add, another domain's reason and no
    # ErrorInfo at all: unspecified (the caller goes by the code).
    newer = failed(code_pb2.UNAVAILABLE, error_details_pb2.ErrorInfo(reason="SOMETHING_NEW", domain=DOMAIN))
    other = failed(code_pb2.ABORTED, error_details_pb2.ErrorInfo(reason="VERSION_CONFLICT", domain="example.com"))
    bare = failed(code_pb2.INTERNAL)
    for err in (newer, other, bare):
        assert error_reason(err) == ErrorReason.ERROR_REASON_UNSPECIFIED
        assert retry_delay(err) is None

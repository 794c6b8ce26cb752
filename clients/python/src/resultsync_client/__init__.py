"""Typed Python client of resultsync's gRPC APIs.

The generated modules of the proto package ``fitness.v1`` live in
``resultsync_client.fitness.v1`` (one module per proto file: ``result_pb2``
messages, ``result_pb2_grpc`` stubs, ...; inside this package, so no
top-level ``fitness`` can collide with them). This module adds what every
caller needs besides them:

* :func:`connect` opens a channel that sends a bearer token with every call
  (unary and streaming), plaintext or over TLS, with resultsync's gRPC
  service config (:data:`SERVICE_CONFIG`: round-robin over the target's
  addresses, retries of the methods safe to send again on UNAVAILABLE);
* :func:`tls_credentials` reads the PEM files of a private CA and, for
  mutual TLS, of a client certificate into channel credentials;
* :func:`version_conflict` decodes the ``fitness.v1.VersionConflict`` detail
  of an ABORTED error (a correction or deletion at a stale version);
* :func:`error_reason` returns an error's reason as the typed
  ``fitness.v1.ErrorReason`` (:data:`ErrorReason`), from its
  ``google.rpc.ErrorInfo``; :func:`retry_delay` its ``RetryInfo`` delay and
  :func:`field_violations` its ``BadRequest`` field violations;
* :func:`details` returns every typed detail of an error's
  ``google.rpc.Status``.

Example::

    from resultsync_client import connect, version_conflict
    from resultsync_client.fitness.v1 import result_pb2, result_pb2_grpc

    with connect("127.0.0.1:7101", token="dev-operator") as channel:
        results = result_pb2_grpc.ResultServiceStub(channel)
        got = results.GetResult(result_pb2.GetResultRequest(school_id=8, data_id=900001))
"""

from __future__ import annotations

import datetime
import importlib.resources
from typing import Any, Callable, Iterable, Optional, Type, TypeVar, cast

import grpc
from google.protobuf import message as _message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from resultsync_client.fitness.v1 import (
    errors_pb2,
    outbox_pb2_grpc,
    projection_pb2_grpc,
    reconcile_pb2_grpc,
    repair_pb2_grpc,
    result_pb2,
    result_pb2_grpc,
)

__all__ = [
    "DOMAIN",
    "SERVICE_CONFIG",
    "ErrorReason",
    "connect",
    "details",
    "error_reason",
    "field_violations",
    "retry_delay",
    "tls_credentials",
    "version_conflict",
    "ResultServiceStub",
    "OutboxServiceStub",
    "ProjectionServiceStub",
    "ReconcileServiceStub",
    "RepairServiceStub",
]

ResultServiceStub = result_pb2_grpc.ResultServiceStub
OutboxServiceStub = outbox_pb2_grpc.OutboxServiceStub
ProjectionServiceStub = projection_pb2_grpc.ProjectionServiceStub
ReconcileServiceStub = reconcile_pb2_grpc.ReconcileServiceStub
RepairServiceStub = repair_pb2_grpc.RepairServiceStub

M = TypeVar("M", bound=_message.Message)

#: The ``google.rpc.ErrorInfo`` domain of every resultsync error.
DOMAIN = "resultsync.fitness.v1"

#: resultsync's gRPC service config (JSON), the canonical
#: clients/go/serviceconfig/service_config.json shipped in this package
#: (generate.sh copies it): round_robin over every address the target
#: resolves to, and a retryPolicy (up to 4 attempts on UNAVAILABLE, backoff
#: from 0.5 s doubling to 5 s, throttled) for the reads and the writes whose
#: request_id makes a retry safe. :func:`connect` uses it unless told not to.
SERVICE_CONFIG: str = importlib.resources.files(__name__).joinpath("service_config.json").read_text(encoding="utf-8")

#: The catalogue of error reasons as a typed enum (``fitness.v1.ErrorReason``,
#: docs/calling.md): ``ErrorReason.VERSION_CONFLICT``, ...;
#: ``ErrorReason.ERROR_REASON_UNSPECIFIED`` for none or an unknown one.
ErrorReason = errors_pb2.ErrorReason


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer <token>`` to the metadata of every call."""

    def __init__(self, token: str) -> None:
        self._pair = ("authorization", "Bearer " + token)

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = tuple(m for m in (details.metadata or ()) if m[0] != "authorization") + (self._pair,)
        return _CallDetails(details, metadata)

    # The continuations' call types are grpc's (private in its stubs): Any here.
    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails,
        request: Any,
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails,
        request: Any,
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails,
        request_iterator: Any,
    ) -> Any:
        return continuation(self._with_token(client_call_details), request_iterator)

    def intercept_stream_stream(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails,
        request_iterator: Any,
    ) -> Any:
        return continuation(self._with_token(client_call_details), request_iterator)


class _CallDetails(grpc.ClientCallDetails):
    def __init__(self, base: grpc.ClientCallDetails, metadata: tuple[tuple[str, str | bytes], ...]) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = base.wait_for_ready
        self.compression = base.compression


def connect(
    target: str,
    token: Optional[str] = None,
    *,
    credentials: Optional[grpc.ChannelCredentials] = None,
    options: Iterable[tuple[str, object]] = (),
    service_config: Optional[str] = SERVICE_CONFIG,
) -> grpc.Channel:
    """Opens a channel to a resultsync server at ``target`` ("host:port").

    With ``token`` every call carries ``authorization: Bearer <token>``
    (the servers' tokens map to the viewer, operator and admin roles).
    Without ``credentials`` the channel is plaintext (the local stack);
    pass :func:`tls_credentials` (a private CA, a client certificate) or
    ``grpc.ssl_channel_credentials()`` (the system roots) for TLS. The
    channel is a context manager; close it when done.

    The channel applies ``service_config`` (:data:`SERVICE_CONFIG` unless
    given: a call the server answers UNAVAILABLE is sent again, at most 4
    times in all, when its method is safe to repeat), with gRPC's retries
    enabled; None leaves both to grpc's defaults, and so does a
    ``grpc.service_config`` among ``options``.
    """
    opts = list(options)
    if service_config is not None and not any(k == "grpc.service_config" for k, _ in opts):
        opts += [("grpc.service_config", service_config), ("grpc.enable_retries", 1)]
    if credentials is None:
        channel = grpc.insecure_channel(target, options=opts)
    else:
        channel = grpc.secure_channel(target, credentials, options=opts)
    if token is None:
        return channel
    return grpc.intercept_channel(channel, _BearerToken(token))


def tls_credentials(
    ca_file: Optional[str] = None,
    cert_file: Optional[str] = None,
    key_file: Optional[str] = None,
) -> grpc.ChannelCredentials:
    """TLS channel credentials from PEM files: ``ca_file`` holds the CA
    certificates that verify the server (None: the system roots), and
    ``cert_file`` with ``key_file`` the client certificate presented to a
    server that requires one (mutual TLS, ``--tls-client-auth``). The files
    are read once: a channel opened after a certificate is renewed uses the
    new one."""
    if (cert_file is None) != (key_file is None):
        raise ValueError("cert_file and key_file go together (mutual TLS needs both)")

    def read(path: Optional[str]) -> Optional[bytes]:
        if path is None:
            return None
        with open(path, "rb") as f:
            return f.read()

    return grpc.ssl_channel_credentials(
        root_certificates=read(ca_file), private_key=read(key_file), certificate_chain=read(cert_file))


def details(err: grpc.RpcError, message_type: Type[M]) -> list[M]:
    """Returns the details of type ``message_type`` that the server attached
    to ``err`` (its ``google.rpc.Status`` in grpc-status-details-bin);
    empty when there are none."""
    status: Optional[status_pb2.Status] = rpc_status.from_call(err)  # type: ignore[arg-type,unused-ignore]
    if status is None:
        return []
    out: list[M] = []
    for any_detail in status.details:
        if any_detail.Is(message_type.DESCRIPTOR):
            msg = message_type()
            any_detail.Unpack(msg)
            out.append(msg)
    return out


def version_conflict(err: grpc.RpcError) -> Optional[result_pb2.VersionConflict]:
    """Returns the ``VersionConflict`` of an ABORTED correction or deletion
    (the version the caller expected and the record's current one), or None
    when ``err`` is another error."""
    if err.code() != grpc.StatusCode.ABORTED:  # type: ignore[attr-defined,unused-ignore]
        return None
    found = details(err, result_pb2.VersionConflict)
    return found[0] if found else None


def error_reason(err: grpc.RpcError) -> errors_pb2.ErrorReason:
    """Returns the reason of ``err`` as the typed ``ErrorReason``: the
    ``google.rpc.ErrorInfo`` of domain :data:`DOMAIN` the server attached,
    mapped by name (``ErrorReason.VERSION_CONFLICT``, ...).
    ``ErrorReason.ERROR_REASON_UNSPECIFIED`` when the error carries none or a
    reason this client does not know yet: treat it by its status code."""
    for info in details(err, error_details_pb2.ErrorInfo):
        if info.domain == DOMAIN:
            try:
                return cast(errors_pb2.ErrorReason, errors_pb2.ErrorReason.Value(info.reason))
            except ValueError:
                break
    return errors_pb2.ErrorReason.ERROR_REASON_UNSPECIFIED


def retry_delay(err: grpc.RpcError) -> Optional[datetime.timedelta]:
    """Returns how long to wait before sending the same request again (the
    ``google.rpc.RetryInfo`` of a CONTENTION, REQUEST_IN_PROGRESS,
    UNAVAILABLE or RESOURCE_EXHAUSTED error; double it on each further
    failure), or None when the server gave none."""
    found = details(err, error_details_pb2.RetryInfo)
    if not found or not found[0].HasField("retry_delay"):
        return None
    delay: datetime.timedelta = found[0].retry_delay.ToTimedelta()
    return delay


def field_violations(err: grpc.RpcError) -> list[error_details_pb2.BadRequest.FieldViolation]:
    """Returns the invalid fields of a FIELD_VIOLATION error (its
    ``google.rpc.BadRequest``: each ``field`` and ``description``); empty
    for another error."""
    return [v for bad in details(err, error_details_pb2.BadRequest) for v in bad.field_violations]

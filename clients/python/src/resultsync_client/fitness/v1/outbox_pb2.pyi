import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OutboxStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTBOX_STATUS_UNSPECIFIED: _ClassVar[OutboxStatus]
    OUTBOX_STATUS_NEW: _ClassVar[OutboxStatus]
    OUTBOX_STATUS_PROCESSING: _ClassVar[OutboxStatus]
    OUTBOX_STATUS_SENT: _ClassVar[OutboxStatus]
    OUTBOX_STATUS_FAILED: _ClassVar[OutboxStatus]
    OUTBOX_STATUS_PARKED: _ClassVar[OutboxStatus]
OUTBOX_STATUS_UNSPECIFIED: OutboxStatus
OUTBOX_STATUS_NEW: OutboxStatus
OUTBOX_STATUS_PROCESSING: OutboxStatus
OUTBOX_STATUS_SENT: OutboxStatus
OUTBOX_STATUS_FAILED: OutboxStatus
OUTBOX_STATUS_PARKED: OutboxStatus

class OutboxEvent(_message.Message):
    __slots__ = ("shard_id", "id", "event_id", "data_id", "version", "status", "attempts", "last_error", "create_time", "next_retry_time", "lease_expire_time", "sent_time")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_TIME_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    SENT_TIME_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    id: int
    event_id: str
    data_id: int
    version: int
    status: OutboxStatus
    attempts: int
    last_error: str
    create_time: _timestamp_pb2.Timestamp
    next_retry_time: _timestamp_pb2.Timestamp
    lease_expire_time: _timestamp_pb2.Timestamp
    sent_time: _timestamp_pb2.Timestamp
    def __init__(self, shard_id: _Optional[str] = ..., id: _Optional[int] = ..., event_id: _Optional[str] = ..., data_id: _Optional[int] = ..., version: _Optional[int] = ..., status: _Optional[_Union[OutboxStatus, str]] = ..., attempts: _Optional[int] = ..., last_error: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_retry_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sent_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListOutboxEventsRequest(_message.Message):
    __slots__ = ("shard_id", "status", "page_size", "page_token")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    status: OutboxStatus
    page_size: int
    page_token: str
    def __init__(self, shard_id: _Optional[str] = ..., status: _Optional[_Union[OutboxStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOutboxEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[OutboxEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[OutboxEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetOutboxStatsRequest(_message.Message):
    __slots__ = ("shard_id",)
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    def __init__(self, shard_id: _Optional[str] = ...) -> None: ...

class ShardOutboxStats(_message.Message):
    __slots__ = ("shard_id", "new_count", "processing_count", "failed_count", "parked_count", "sent_count", "expired_claims", "oldest_unsent_age")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_COUNT_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_COUNT_FIELD_NUMBER: _ClassVar[int]
    FAILED_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARKED_COUNT_FIELD_NUMBER: _ClassVar[int]
    SENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_UNSENT_AGE_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    new_count: int
    processing_count: int
    failed_count: int
    parked_count: int
    sent_count: int
    expired_claims: int
    oldest_unsent_age: _duration_pb2.Duration
    def __init__(self, shard_id: _Optional[str] = ..., new_count: _Optional[int] = ..., processing_count: _Optional[int] = ..., failed_count: _Optional[int] = ..., parked_count: _Optional[int] = ..., sent_count: _Optional[int] = ..., expired_claims: _Optional[int] = ..., oldest_unsent_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetOutboxStatsResponse(_message.Message):
    __slots__ = ("shards",)
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    shards: _containers.RepeatedCompositeFieldContainer[ShardOutboxStats]
    def __init__(self, shards: _Optional[_Iterable[_Union[ShardOutboxStats, _Mapping]]] = ...) -> None: ...

class ReplayParkedEventsRequest(_message.Message):
    __slots__ = ("shard_id", "ids", "data_id", "reason", "limit", "request_id")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    ids: _containers.RepeatedScalarFieldContainer[int]
    data_id: int
    reason: str
    limit: int
    request_id: str
    def __init__(self, shard_id: _Optional[str] = ..., ids: _Optional[_Iterable[int]] = ..., data_id: _Optional[int] = ..., reason: _Optional[str] = ..., limit: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReplayParkedEventsResponse(_message.Message):
    __slots__ = ("replayed_count", "audit_id")
    REPLAYED_COUNT_FIELD_NUMBER: _ClassVar[int]
    AUDIT_ID_FIELD_NUMBER: _ClassVar[int]
    replayed_count: int
    audit_id: str
    def __init__(self, replayed_count: _Optional[int] = ..., audit_id: _Optional[str] = ...) -> None: ...

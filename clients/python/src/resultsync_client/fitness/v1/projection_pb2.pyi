import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ShardLag(_message.Message):
    __slots__ = ("shard_id", "newest_applied_commit_time", "lag", "ingest_delay")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    NEWEST_APPLIED_COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    INGEST_DELAY_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    newest_applied_commit_time: _timestamp_pb2.Timestamp
    lag: _duration_pb2.Duration
    ingest_delay: _duration_pb2.Duration
    def __init__(self, shard_id: _Optional[str] = ..., newest_applied_commit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lag: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., ingest_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetProjectionStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetProjectionStatusResponse(_message.Message):
    __slots__ = ("shards", "applied_events", "dead_lettered_events")
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_EVENTS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_EVENTS_FIELD_NUMBER: _ClassVar[int]
    shards: _containers.RepeatedCompositeFieldContainer[ShardLag]
    applied_events: int
    dead_lettered_events: int
    def __init__(self, shards: _Optional[_Iterable[_Union[ShardLag, _Mapping]]] = ..., applied_events: _Optional[int] = ..., dead_lettered_events: _Optional[int] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("message_id", "event_id", "reason", "create_time")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    event_id: str
    reason: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, message_id: _Optional[str] = ..., event_id: _Optional[str] = ..., reason: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("dead_letters", "next_page_token")
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    next_page_token: str
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

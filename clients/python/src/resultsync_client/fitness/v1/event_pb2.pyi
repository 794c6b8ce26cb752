import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FitnessResultChanged(_message.Message):
    __slots__ = ("event_id", "data_id", "detect_id", "user_id", "project_id", "school_id", "grade", "version", "result", "unit", "is_deleted", "schema_version", "source_commit_time", "shard_id")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    GRADE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    IS_DELETED_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    data_id: int
    detect_id: int
    user_id: int
    project_id: int
    school_id: int
    grade: int
    version: int
    result: str
    unit: str
    is_deleted: bool
    schema_version: int
    source_commit_time: _timestamp_pb2.Timestamp
    shard_id: str
    def __init__(self, event_id: _Optional[str] = ..., data_id: _Optional[int] = ..., detect_id: _Optional[int] = ..., user_id: _Optional[int] = ..., project_id: _Optional[int] = ..., school_id: _Optional[int] = ..., grade: _Optional[int] = ..., version: _Optional[int] = ..., result: _Optional[str] = ..., unit: _Optional[str] = ..., is_deleted: _Optional[bool] = ..., schema_version: _Optional[int] = ..., source_commit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., shard_id: _Optional[str] = ...) -> None: ...

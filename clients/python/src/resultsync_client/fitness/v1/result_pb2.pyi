import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FitnessResult(_message.Message):
    __slots__ = ("data_id", "detect_id", "user_id", "project_id", "school_id", "grade", "version", "result", "unit", "is_deleted", "shard_id", "update_time")
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
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
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
    shard_id: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, data_id: _Optional[int] = ..., detect_id: _Optional[int] = ..., user_id: _Optional[int] = ..., project_id: _Optional[int] = ..., school_id: _Optional[int] = ..., grade: _Optional[int] = ..., version: _Optional[int] = ..., result: _Optional[str] = ..., unit: _Optional[str] = ..., is_deleted: _Optional[bool] = ..., shard_id: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class VersionConflict(_message.Message):
    __slots__ = ("data_id", "expected_version", "current_version")
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    data_id: int
    expected_version: int
    current_version: int
    def __init__(self, data_id: _Optional[int] = ..., expected_version: _Optional[int] = ..., current_version: _Optional[int] = ...) -> None: ...

class RecordResultRequest(_message.Message):
    __slots__ = ("request_id", "data_id", "detect_id", "user_id", "project_id", "school_id", "grade", "result", "unit")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    GRADE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    data_id: int
    detect_id: int
    user_id: int
    project_id: int
    school_id: int
    grade: int
    result: str
    unit: str
    def __init__(self, request_id: _Optional[str] = ..., data_id: _Optional[int] = ..., detect_id: _Optional[int] = ..., user_id: _Optional[int] = ..., project_id: _Optional[int] = ..., school_id: _Optional[int] = ..., grade: _Optional[int] = ..., result: _Optional[str] = ..., unit: _Optional[str] = ...) -> None: ...

class RecordResultResponse(_message.Message):
    __slots__ = ("result", "event_id")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    result: FitnessResult
    event_id: str
    def __init__(self, result: _Optional[_Union[FitnessResult, _Mapping]] = ..., event_id: _Optional[str] = ...) -> None: ...

class CorrectResultRequest(_message.Message):
    __slots__ = ("request_id", "school_id", "data_id", "expected_version", "result", "unit", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    school_id: int
    data_id: int
    expected_version: int
    result: str
    unit: str
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., school_id: _Optional[int] = ..., data_id: _Optional[int] = ..., expected_version: _Optional[int] = ..., result: _Optional[str] = ..., unit: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CorrectResultResponse(_message.Message):
    __slots__ = ("result", "event_id")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    result: FitnessResult
    event_id: str
    def __init__(self, result: _Optional[_Union[FitnessResult, _Mapping]] = ..., event_id: _Optional[str] = ...) -> None: ...

class DeleteResultRequest(_message.Message):
    __slots__ = ("request_id", "school_id", "data_id", "expected_version", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    school_id: int
    data_id: int
    expected_version: int
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., school_id: _Optional[int] = ..., data_id: _Optional[int] = ..., expected_version: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class DeleteResultResponse(_message.Message):
    __slots__ = ("result", "event_id")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    result: FitnessResult
    event_id: str
    def __init__(self, result: _Optional[_Union[FitnessResult, _Mapping]] = ..., event_id: _Optional[str] = ...) -> None: ...

class GetResultRequest(_message.Message):
    __slots__ = ("school_id", "data_id")
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    school_id: int
    data_id: int
    def __init__(self, school_id: _Optional[int] = ..., data_id: _Optional[int] = ...) -> None: ...

class GetResultResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: FitnessResult
    def __init__(self, result: _Optional[_Union[FitnessResult, _Mapping]] = ...) -> None: ...

class ListResultsRequest(_message.Message):
    __slots__ = ("detect_id", "school_id", "project_id", "show_deleted", "page_size", "page_token")
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SHOW_DELETED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    detect_id: int
    school_id: int
    project_id: int
    show_deleted: bool
    page_size: int
    page_token: str
    def __init__(self, detect_id: _Optional[int] = ..., school_id: _Optional[int] = ..., project_id: _Optional[int] = ..., show_deleted: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListResultsResponse(_message.Message):
    __slots__ = ("results", "next_page_token")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[FitnessResult]
    next_page_token: str
    def __init__(self, results: _Optional[_Iterable[_Union[FitnessResult, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

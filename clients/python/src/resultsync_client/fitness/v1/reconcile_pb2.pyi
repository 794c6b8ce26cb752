import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReconcileDepth(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECONCILE_DEPTH_UNSPECIFIED: _ClassVar[ReconcileDepth]
    RECONCILE_DEPTH_COUNTS: _ClassVar[ReconcileDepth]
    RECONCILE_DEPTH_VERSIONS: _ClassVar[ReconcileDepth]
    RECONCILE_DEPTH_CONTENT: _ClassVar[ReconcileDepth]

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_PENDING: _ClassVar[RunState]
    RUN_STATE_RUNNING: _ClassVar[RunState]
    RUN_STATE_WAITING_FOR_CATCH_UP: _ClassVar[RunState]
    RUN_STATE_SUCCEEDED: _ClassVar[RunState]
    RUN_STATE_FAILED: _ClassVar[RunState]
    RUN_STATE_QUEUED: _ClassVar[RunState]
    RUN_STATE_BOUNDARY_NOT_REACHED: _ClassVar[RunState]

class DiscrepancyClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISCREPANCY_CLASS_UNSPECIFIED: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_MISSING_IN_TARGET: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_STALE_TARGET_VERSION: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_DELETION_NOT_APPLIED: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_CONTENT_MISMATCH: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD: _ClassVar[DiscrepancyClass]
    DISCREPANCY_CLASS_TARGET_AHEAD_OF_SOURCE: _ClassVar[DiscrepancyClass]

class DiscrepancyResolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISCREPANCY_RESOLUTION_UNSPECIFIED: _ClassVar[DiscrepancyResolution]
    DISCREPANCY_RESOLUTION_CLEAN_RUN: _ClassVar[DiscrepancyResolution]
    DISCREPANCY_RESOLUTION_VERIFIED_REPAIR: _ClassVar[DiscrepancyResolution]
RECONCILE_DEPTH_UNSPECIFIED: ReconcileDepth
RECONCILE_DEPTH_COUNTS: ReconcileDepth
RECONCILE_DEPTH_VERSIONS: ReconcileDepth
RECONCILE_DEPTH_CONTENT: ReconcileDepth
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_PENDING: RunState
RUN_STATE_RUNNING: RunState
RUN_STATE_WAITING_FOR_CATCH_UP: RunState
RUN_STATE_SUCCEEDED: RunState
RUN_STATE_FAILED: RunState
RUN_STATE_QUEUED: RunState
RUN_STATE_BOUNDARY_NOT_REACHED: RunState
DISCREPANCY_CLASS_UNSPECIFIED: DiscrepancyClass
DISCREPANCY_CLASS_MISSING_IN_TARGET: DiscrepancyClass
DISCREPANCY_CLASS_STALE_TARGET_VERSION: DiscrepancyClass
DISCREPANCY_CLASS_DELETION_NOT_APPLIED: DiscrepancyClass
DISCREPANCY_CLASS_CONTENT_MISMATCH: DiscrepancyClass
DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD: DiscrepancyClass
DISCREPANCY_CLASS_TARGET_AHEAD_OF_SOURCE: DiscrepancyClass
DISCREPANCY_RESOLUTION_UNSPECIFIED: DiscrepancyResolution
DISCREPANCY_RESOLUTION_CLEAN_RUN: DiscrepancyResolution
DISCREPANCY_RESOLUTION_VERIFIED_REPAIR: DiscrepancyResolution

class ReconcileScope(_message.Message):
    __slots__ = ("detect_id", "project_id", "school_id")
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    detect_id: int
    project_id: int
    school_id: int
    def __init__(self, detect_id: _Optional[int] = ..., project_id: _Optional[int] = ..., school_id: _Optional[int] = ...) -> None: ...

class ReconciliationRun(_message.Message):
    __slots__ = ("run_id", "scope", "depth", "state", "buckets_done", "buckets_total", "rows_compared", "discrepancy_count", "boundary_retries", "message", "error_message", "create_time", "end_time", "sample_rate", "in_flight_count", "shards")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_DONE_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ROWS_COMPARED_FIELD_NUMBER: _ClassVar[int]
    DISCREPANCY_COUNT_FIELD_NUMBER: _ClassVar[int]
    BOUNDARY_RETRIES_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    scope: ReconcileScope
    depth: ReconcileDepth
    state: RunState
    buckets_done: int
    buckets_total: int
    rows_compared: int
    discrepancy_count: int
    boundary_retries: int
    message: str
    error_message: str
    create_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    sample_rate: float
    in_flight_count: int
    shards: _containers.RepeatedCompositeFieldContainer[RunShard]
    def __init__(self, run_id: _Optional[str] = ..., scope: _Optional[_Union[ReconcileScope, _Mapping]] = ..., depth: _Optional[_Union[ReconcileDepth, str]] = ..., state: _Optional[_Union[RunState, str]] = ..., buckets_done: _Optional[int] = ..., buckets_total: _Optional[int] = ..., rows_compared: _Optional[int] = ..., discrepancy_count: _Optional[int] = ..., boundary_retries: _Optional[int] = ..., message: _Optional[str] = ..., error_message: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sample_rate: _Optional[float] = ..., in_flight_count: _Optional[int] = ..., shards: _Optional[_Iterable[_Union[RunShard, _Mapping]]] = ...) -> None: ...

class RunShard(_message.Message):
    __slots__ = ("shard_id", "boundary_time", "applied_time", "behind", "in_flight_count")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    BOUNDARY_TIME_FIELD_NUMBER: _ClassVar[int]
    APPLIED_TIME_FIELD_NUMBER: _ClassVar[int]
    BEHIND_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_COUNT_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    boundary_time: _timestamp_pb2.Timestamp
    applied_time: _timestamp_pb2.Timestamp
    behind: bool
    in_flight_count: int
    def __init__(self, shard_id: _Optional[str] = ..., boundary_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., applied_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., behind: _Optional[bool] = ..., in_flight_count: _Optional[int] = ...) -> None: ...

class RecordSide(_message.Message):
    __slots__ = ("present", "version", "is_deleted", "canonical")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    IS_DELETED_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_FIELD_NUMBER: _ClassVar[int]
    present: bool
    version: int
    is_deleted: bool
    canonical: str
    def __init__(self, present: _Optional[bool] = ..., version: _Optional[int] = ..., is_deleted: _Optional[bool] = ..., canonical: _Optional[str] = ...) -> None: ...

class Discrepancy(_message.Message):
    __slots__ = ("discrepancy_id", "run_id", "data_id", "detect_id", "source", "target", "create_time", "resolved", "resolved_by_run_id", "resolve_time", "resolution")
    DISCREPANCY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CLASS_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLVE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    discrepancy_id: str
    run_id: str
    data_id: int
    detect_id: int
    source: RecordSide
    target: RecordSide
    create_time: _timestamp_pb2.Timestamp
    resolved: bool
    resolved_by_run_id: str
    resolve_time: _timestamp_pb2.Timestamp
    resolution: DiscrepancyResolution
    def __init__(self, discrepancy_id: _Optional[str] = ..., run_id: _Optional[str] = ..., data_id: _Optional[int] = ..., detect_id: _Optional[int] = ..., source: _Optional[_Union[RecordSide, _Mapping]] = ..., target: _Optional[_Union[RecordSide, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resolved: _Optional[bool] = ..., resolved_by_run_id: _Optional[str] = ..., resolve_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resolution: _Optional[_Union[DiscrepancyResolution, str]] = ..., **kwargs) -> None: ...

class StartReconciliationRunRequest(_message.Message):
    __slots__ = ("scope", "depth", "sample_rate", "request_id")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scope: ReconcileScope
    depth: ReconcileDepth
    sample_rate: float
    request_id: str
    def __init__(self, scope: _Optional[_Union[ReconcileScope, _Mapping]] = ..., depth: _Optional[_Union[ReconcileDepth, str]] = ..., sample_rate: _Optional[float] = ..., request_id: _Optional[str] = ...) -> None: ...

class StartReconciliationRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: ReconciliationRun
    def __init__(self, run: _Optional[_Union[ReconciliationRun, _Mapping]] = ...) -> None: ...

class GetReconciliationRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetReconciliationRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: ReconciliationRun
    def __init__(self, run: _Optional[_Union[ReconciliationRun, _Mapping]] = ...) -> None: ...

class ListReconciliationRunsRequest(_message.Message):
    __slots__ = ("detect_id", "page_size", "page_token")
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    detect_id: int
    page_size: int
    page_token: str
    def __init__(self, detect_id: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListReconciliationRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[ReconciliationRun]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[ReconciliationRun, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchReconciliationRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class WatchReconciliationRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: ReconciliationRun
    def __init__(self, run: _Optional[_Union[ReconciliationRun, _Mapping]] = ...) -> None: ...

class ListDiscrepanciesRequest(_message.Message):
    __slots__ = ("run_id", "page_size", "page_token", "unresolved_only")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CLASS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    UNRESOLVED_ONLY_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    page_size: int
    page_token: str
    unresolved_only: bool
    def __init__(self, run_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., unresolved_only: _Optional[bool] = ..., **kwargs) -> None: ...

class ListDiscrepanciesResponse(_message.Message):
    __slots__ = ("discrepancies", "next_page_token")
    DISCREPANCIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    discrepancies: _containers.RepeatedCompositeFieldContainer[Discrepancy]
    next_page_token: str
    def __init__(self, discrepancies: _Optional[_Iterable[_Union[Discrepancy, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CampaignSchedule(_message.Message):
    __slots__ = ("detect_id", "first_seen_time", "last_clean_run_id", "last_clean_time", "last_clean_revision", "last_run_id", "last_run_time", "sample_cursor", "last_sample_time", "checked_buckets", "buckets_total", "oldest_check_time")
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_CLEAN_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_CLEAN_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_CLEAN_REVISION_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    LAST_SAMPLE_TIME_FIELD_NUMBER: _ClassVar[int]
    CHECKED_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    OLDEST_CHECK_TIME_FIELD_NUMBER: _ClassVar[int]
    detect_id: int
    first_seen_time: _timestamp_pb2.Timestamp
    last_clean_run_id: str
    last_clean_time: _timestamp_pb2.Timestamp
    last_clean_revision: int
    last_run_id: str
    last_run_time: _timestamp_pb2.Timestamp
    sample_cursor: int
    last_sample_time: _timestamp_pb2.Timestamp
    checked_buckets: int
    buckets_total: int
    oldest_check_time: _timestamp_pb2.Timestamp
    def __init__(self, detect_id: _Optional[int] = ..., first_seen_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_clean_run_id: _Optional[str] = ..., last_clean_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_clean_revision: _Optional[int] = ..., last_run_id: _Optional[str] = ..., last_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sample_cursor: _Optional[int] = ..., last_sample_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., checked_buckets: _Optional[int] = ..., buckets_total: _Optional[int] = ..., oldest_check_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListCampaignsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListCampaignsResponse(_message.Message):
    __slots__ = ("campaigns", "next_page_token")
    CAMPAIGNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    campaigns: _containers.RepeatedCompositeFieldContainer[CampaignSchedule]
    next_page_token: str
    def __init__(self, campaigns: _Optional[_Iterable[_Union[CampaignSchedule, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

import datetime

from resultsync_client.fitness.v1 import reconcile_pb2 as _reconcile_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RepairState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REPAIR_STATE_UNSPECIFIED: _ClassVar[RepairState]
    REPAIR_STATE_AWAITING_APPROVAL: _ClassVar[RepairState]
    REPAIR_STATE_EXECUTING: _ClassVar[RepairState]
    REPAIR_STATE_AWAITING_VERIFICATION: _ClassVar[RepairState]
    REPAIR_STATE_VERIFIED: _ClassVar[RepairState]
    REPAIR_STATE_FAILED: _ClassVar[RepairState]
    REPAIR_STATE_CANCELLED: _ClassVar[RepairState]

class RepairAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REPAIR_ACTION_UNSPECIFIED: _ClassVar[RepairAction]
    REPAIR_ACTION_REPLAY: _ClassVar[RepairAction]
    REPAIR_ACTION_TOMBSTONE: _ClassVar[RepairAction]
    REPAIR_ACTION_REBUILD: _ClassVar[RepairAction]
    REPAIR_ACTION_REMOVE: _ClassVar[RepairAction]

class RepairItemOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REPAIR_ITEM_OUTCOME_UNSPECIFIED: _ClassVar[RepairItemOutcome]
    REPAIR_ITEM_OUTCOME_PENDING: _ClassVar[RepairItemOutcome]
    REPAIR_ITEM_OUTCOME_APPLIED: _ClassVar[RepairItemOutcome]
    REPAIR_ITEM_OUTCOME_SUPERSEDED_BY_NEWER_VERSION: _ClassVar[RepairItemOutcome]
    REPAIR_ITEM_OUTCOME_FAILED: _ClassVar[RepairItemOutcome]

class VerificationResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERIFICATION_RESULT_UNSPECIFIED: _ClassVar[VerificationResult]
    VERIFICATION_RESULT_PENDING: _ClassVar[VerificationResult]
    VERIFICATION_RESULT_PASSED: _ClassVar[VerificationResult]
    VERIFICATION_RESULT_FAILED: _ClassVar[VerificationResult]

class RebuildPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REBUILD_PHASE_UNSPECIFIED: _ClassVar[RebuildPhase]
    REBUILD_PHASE_BUILDING: _ClassVar[RebuildPhase]
    REBUILD_PHASE_CATCHING_UP: _ClassVar[RebuildPhase]
    REBUILD_PHASE_VERIFYING: _ClassVar[RebuildPhase]
    REBUILD_PHASE_SWITCHING: _ClassVar[RebuildPhase]
    REBUILD_PHASE_SWITCHED: _ClassVar[RebuildPhase]
REPAIR_STATE_UNSPECIFIED: RepairState
REPAIR_STATE_AWAITING_APPROVAL: RepairState
REPAIR_STATE_EXECUTING: RepairState
REPAIR_STATE_AWAITING_VERIFICATION: RepairState
REPAIR_STATE_VERIFIED: RepairState
REPAIR_STATE_FAILED: RepairState
REPAIR_STATE_CANCELLED: RepairState
REPAIR_ACTION_UNSPECIFIED: RepairAction
REPAIR_ACTION_REPLAY: RepairAction
REPAIR_ACTION_TOMBSTONE: RepairAction
REPAIR_ACTION_REBUILD: RepairAction
REPAIR_ACTION_REMOVE: RepairAction
REPAIR_ITEM_OUTCOME_UNSPECIFIED: RepairItemOutcome
REPAIR_ITEM_OUTCOME_PENDING: RepairItemOutcome
REPAIR_ITEM_OUTCOME_APPLIED: RepairItemOutcome
REPAIR_ITEM_OUTCOME_SUPERSEDED_BY_NEWER_VERSION: RepairItemOutcome
REPAIR_ITEM_OUTCOME_FAILED: RepairItemOutcome
VERIFICATION_RESULT_UNSPECIFIED: VerificationResult
VERIFICATION_RESULT_PENDING: VerificationResult
VERIFICATION_RESULT_PASSED: VerificationResult
VERIFICATION_RESULT_FAILED: VerificationResult
REBUILD_PHASE_UNSPECIFIED: RebuildPhase
REBUILD_PHASE_BUILDING: RebuildPhase
REBUILD_PHASE_CATCHING_UP: RebuildPhase
REBUILD_PHASE_VERIFYING: RebuildPhase
REBUILD_PHASE_SWITCHING: RebuildPhase
REBUILD_PHASE_SWITCHED: RebuildPhase

class Repair(_message.Message):
    __slots__ = ("repair_id", "run_id", "discrepancy_ids", "action", "state", "reason", "created_by", "approved_by", "message", "create_time", "end_time", "request_id", "requires_approval", "approve_reason", "items_total", "items_done", "items_failed", "verification", "update_time", "approve_time", "scope", "rebuild_id", "rebuild_epoch", "verify_deadline")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    DISCREPANCY_IDS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    APPROVED_BY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    APPROVE_REASON_FIELD_NUMBER: _ClassVar[int]
    ITEMS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ITEMS_DONE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FAILED_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    APPROVE_TIME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    REBUILD_EPOCH_FIELD_NUMBER: _ClassVar[int]
    VERIFY_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    run_id: str
    discrepancy_ids: _containers.RepeatedScalarFieldContainer[str]
    action: RepairAction
    state: RepairState
    reason: str
    created_by: str
    approved_by: str
    message: str
    create_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    request_id: str
    requires_approval: bool
    approve_reason: str
    items_total: int
    items_done: int
    items_failed: int
    verification: VerificationResult
    update_time: _timestamp_pb2.Timestamp
    approve_time: _timestamp_pb2.Timestamp
    scope: _reconcile_pb2.ReconcileScope
    rebuild_id: str
    rebuild_epoch: int
    verify_deadline: _timestamp_pb2.Timestamp
    def __init__(self, repair_id: _Optional[str] = ..., run_id: _Optional[str] = ..., discrepancy_ids: _Optional[_Iterable[str]] = ..., action: _Optional[_Union[RepairAction, str]] = ..., state: _Optional[_Union[RepairState, str]] = ..., reason: _Optional[str] = ..., created_by: _Optional[str] = ..., approved_by: _Optional[str] = ..., message: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., request_id: _Optional[str] = ..., requires_approval: _Optional[bool] = ..., approve_reason: _Optional[str] = ..., items_total: _Optional[int] = ..., items_done: _Optional[int] = ..., items_failed: _Optional[int] = ..., verification: _Optional[_Union[VerificationResult, str]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., approve_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., scope: _Optional[_Union[_reconcile_pb2.ReconcileScope, _Mapping]] = ..., rebuild_id: _Optional[str] = ..., rebuild_epoch: _Optional[int] = ..., verify_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecordOrigin(_message.Message):
    __slots__ = ("version", "epoch", "event_id", "shard_id", "ingest_time", "source_commit_time", "is_deleted", "school_id", "project_id", "grade", "result", "unit")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    INGEST_TIME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    IS_DELETED_FIELD_NUMBER: _ClassVar[int]
    SCHOOL_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    GRADE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    version: int
    epoch: int
    event_id: str
    shard_id: str
    ingest_time: _timestamp_pb2.Timestamp
    source_commit_time: _timestamp_pb2.Timestamp
    is_deleted: bool
    school_id: int
    project_id: int
    grade: int
    result: str
    unit: str
    def __init__(self, version: _Optional[int] = ..., epoch: _Optional[int] = ..., event_id: _Optional[str] = ..., shard_id: _Optional[str] = ..., ingest_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source_commit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., is_deleted: _Optional[bool] = ..., school_id: _Optional[int] = ..., project_id: _Optional[int] = ..., grade: _Optional[int] = ..., result: _Optional[str] = ..., unit: _Optional[str] = ...) -> None: ...

class RepairItem(_message.Message):
    __slots__ = ("repair_id", "seq", "discrepancy_id", "data_id", "detect_id", "shard_id", "action", "source_version", "target_version", "applied_version", "event_id", "outcome", "verification", "origins", "message", "rows_removed", "apply_time")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DISCREPANCY_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_ID_FIELD_NUMBER: _ClassVar[int]
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    CLASS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLIED_VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    ORIGINS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ROWS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    APPLY_TIME_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    seq: int
    discrepancy_id: str
    data_id: int
    detect_id: int
    shard_id: str
    action: RepairAction
    source_version: int
    target_version: int
    applied_version: int
    event_id: str
    outcome: RepairItemOutcome
    verification: VerificationResult
    origins: _containers.RepeatedCompositeFieldContainer[RecordOrigin]
    message: str
    rows_removed: int
    apply_time: _timestamp_pb2.Timestamp
    def __init__(self, repair_id: _Optional[str] = ..., seq: _Optional[int] = ..., discrepancy_id: _Optional[str] = ..., data_id: _Optional[int] = ..., detect_id: _Optional[int] = ..., shard_id: _Optional[str] = ..., action: _Optional[_Union[RepairAction, str]] = ..., source_version: _Optional[int] = ..., target_version: _Optional[int] = ..., applied_version: _Optional[int] = ..., event_id: _Optional[str] = ..., outcome: _Optional[_Union[RepairItemOutcome, str]] = ..., verification: _Optional[_Union[VerificationResult, str]] = ..., origins: _Optional[_Iterable[_Union[RecordOrigin, _Mapping]]] = ..., message: _Optional[str] = ..., rows_removed: _Optional[int] = ..., apply_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class Rebuild(_message.Message):
    __slots__ = ("rebuild_id", "scope", "epoch", "state", "rows_written", "message", "create_time", "created_by", "approved_by", "reason", "request_id", "rows_total", "phase", "verification", "end_time", "approve_reason", "approve_time", "update_time", "repair_id")
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ROWS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    APPROVED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    APPROVE_REASON_FIELD_NUMBER: _ClassVar[int]
    APPROVE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    rebuild_id: str
    scope: _reconcile_pb2.ReconcileScope
    epoch: int
    state: RepairState
    rows_written: int
    message: str
    create_time: _timestamp_pb2.Timestamp
    created_by: str
    approved_by: str
    reason: str
    request_id: str
    rows_total: int
    phase: RebuildPhase
    verification: VerificationResult
    end_time: _timestamp_pb2.Timestamp
    approve_reason: str
    approve_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    repair_id: str
    def __init__(self, rebuild_id: _Optional[str] = ..., scope: _Optional[_Union[_reconcile_pb2.ReconcileScope, _Mapping]] = ..., epoch: _Optional[int] = ..., state: _Optional[_Union[RepairState, str]] = ..., rows_written: _Optional[int] = ..., message: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ..., approved_by: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ..., rows_total: _Optional[int] = ..., phase: _Optional[_Union[RebuildPhase, str]] = ..., verification: _Optional[_Union[VerificationResult, str]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., approve_reason: _Optional[str] = ..., approve_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., repair_id: _Optional[str] = ...) -> None: ...

class StateTransition(_message.Message):
    __slots__ = ("from_state", "to_state", "actor", "note", "create_time")
    FROM_STATE_FIELD_NUMBER: _ClassVar[int]
    TO_STATE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    from_state: RepairState
    to_state: RepairState
    actor: str
    note: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, from_state: _Optional[_Union[RepairState, str]] = ..., to_state: _Optional[_Union[RepairState, str]] = ..., actor: _Optional[str] = ..., note: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PlannedAction(_message.Message):
    __slots__ = ("action", "items", "requires_approval")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    action: RepairAction
    items: int
    requires_approval: bool
    def __init__(self, action: _Optional[_Union[RepairAction, str]] = ..., items: _Optional[int] = ..., requires_approval: _Optional[bool] = ...) -> None: ...

class PlannedShardAction(_message.Message):
    __slots__ = ("shard_id", "action", "items")
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    shard_id: str
    action: RepairAction
    items: int
    def __init__(self, shard_id: _Optional[str] = ..., action: _Optional[_Union[RepairAction, str]] = ..., items: _Optional[int] = ...) -> None: ...

class CreateRepairRequest(_message.Message):
    __slots__ = ("run_id", "discrepancy_ids", "reason", "request_id", "rebuild_epoch")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    DISCREPANCY_IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REBUILD_EPOCH_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    discrepancy_ids: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    request_id: str
    rebuild_epoch: int
    def __init__(self, run_id: _Optional[str] = ..., discrepancy_ids: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ..., rebuild_epoch: _Optional[int] = ...) -> None: ...

class CreateRepairResponse(_message.Message):
    __slots__ = ("repairs",)
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    repairs: _containers.RepeatedCompositeFieldContainer[Repair]
    def __init__(self, repairs: _Optional[_Iterable[_Union[Repair, _Mapping]]] = ...) -> None: ...

class PlanRepairRequest(_message.Message):
    __slots__ = ("run_id", "discrepancy_ids", "rebuild_epoch", "max_items")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    DISCREPANCY_IDS_FIELD_NUMBER: _ClassVar[int]
    REBUILD_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    discrepancy_ids: _containers.RepeatedScalarFieldContainer[str]
    rebuild_epoch: int
    max_items: int
    def __init__(self, run_id: _Optional[str] = ..., discrepancy_ids: _Optional[_Iterable[str]] = ..., rebuild_epoch: _Optional[int] = ..., max_items: _Optional[int] = ...) -> None: ...

class PlanRepairResponse(_message.Message):
    __slots__ = ("run_id", "scope", "actions", "shards", "items", "items_truncated", "items_total", "epoch_floor", "skipped")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    ITEMS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FLOOR_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    scope: _reconcile_pb2.ReconcileScope
    actions: _containers.RepeatedCompositeFieldContainer[PlannedAction]
    shards: _containers.RepeatedCompositeFieldContainer[PlannedShardAction]
    items: _containers.RepeatedCompositeFieldContainer[RepairItem]
    items_truncated: bool
    items_total: int
    epoch_floor: int
    skipped: int
    def __init__(self, run_id: _Optional[str] = ..., scope: _Optional[_Union[_reconcile_pb2.ReconcileScope, _Mapping]] = ..., actions: _Optional[_Iterable[_Union[PlannedAction, _Mapping]]] = ..., shards: _Optional[_Iterable[_Union[PlannedShardAction, _Mapping]]] = ..., items: _Optional[_Iterable[_Union[RepairItem, _Mapping]]] = ..., items_truncated: _Optional[bool] = ..., items_total: _Optional[int] = ..., epoch_floor: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class ApproveRepairRequest(_message.Message):
    __slots__ = ("repair_id", "reason", "request_id")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    reason: str
    request_id: str
    def __init__(self, repair_id: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ApproveRepairResponse(_message.Message):
    __slots__ = ("repair",)
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    repair: Repair
    def __init__(self, repair: _Optional[_Union[Repair, _Mapping]] = ...) -> None: ...

class GetRepairRequest(_message.Message):
    __slots__ = ("repair_id",)
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    def __init__(self, repair_id: _Optional[str] = ...) -> None: ...

class GetRepairResponse(_message.Message):
    __slots__ = ("repair", "transitions")
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    repair: Repair
    transitions: _containers.RepeatedCompositeFieldContainer[StateTransition]
    def __init__(self, repair: _Optional[_Union[Repair, _Mapping]] = ..., transitions: _Optional[_Iterable[_Union[StateTransition, _Mapping]]] = ...) -> None: ...

class ListRepairsRequest(_message.Message):
    __slots__ = ("state", "page_size", "page_token", "run_id")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    state: RepairState
    page_size: int
    page_token: str
    run_id: str
    def __init__(self, state: _Optional[_Union[RepairState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class ListRepairsResponse(_message.Message):
    __slots__ = ("repairs", "next_page_token")
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    repairs: _containers.RepeatedCompositeFieldContainer[Repair]
    next_page_token: str
    def __init__(self, repairs: _Optional[_Iterable[_Union[Repair, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListRepairItemsRequest(_message.Message):
    __slots__ = ("repair_id", "page_size", "page_token")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    page_size: int
    page_token: str
    def __init__(self, repair_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRepairItemsResponse(_message.Message):
    __slots__ = ("items", "next_page_token")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[RepairItem]
    next_page_token: str
    def __init__(self, items: _Optional[_Iterable[_Union[RepairItem, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class VerifyRepairRequest(_message.Message):
    __slots__ = ("repair_id", "reason", "request_id")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    reason: str
    request_id: str
    def __init__(self, repair_id: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class VerifyRepairResponse(_message.Message):
    __slots__ = ("repair", "items_passed", "items_mismatched")
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    ITEMS_PASSED_FIELD_NUMBER: _ClassVar[int]
    ITEMS_MISMATCHED_FIELD_NUMBER: _ClassVar[int]
    repair: Repair
    items_passed: int
    items_mismatched: int
    def __init__(self, repair: _Optional[_Union[Repair, _Mapping]] = ..., items_passed: _Optional[int] = ..., items_mismatched: _Optional[int] = ...) -> None: ...

class WatchRepairRequest(_message.Message):
    __slots__ = ("repair_id",)
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    def __init__(self, repair_id: _Optional[str] = ...) -> None: ...

class WatchRepairResponse(_message.Message):
    __slots__ = ("repair",)
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    repair: Repair
    def __init__(self, repair: _Optional[_Union[Repair, _Mapping]] = ...) -> None: ...

class CancelRepairRequest(_message.Message):
    __slots__ = ("repair_id", "reason", "request_id")
    REPAIR_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    repair_id: str
    reason: str
    request_id: str
    def __init__(self, repair_id: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class CancelRepairResponse(_message.Message):
    __slots__ = ("repair",)
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    repair: Repair
    def __init__(self, repair: _Optional[_Union[Repair, _Mapping]] = ...) -> None: ...

class StartRebuildRequest(_message.Message):
    __slots__ = ("scope", "reason", "epoch", "request_id")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scope: _reconcile_pb2.ReconcileScope
    reason: str
    epoch: int
    request_id: str
    def __init__(self, scope: _Optional[_Union[_reconcile_pb2.ReconcileScope, _Mapping]] = ..., reason: _Optional[str] = ..., epoch: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class StartRebuildResponse(_message.Message):
    __slots__ = ("rebuild",)
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    rebuild: Rebuild
    def __init__(self, rebuild: _Optional[_Union[Rebuild, _Mapping]] = ...) -> None: ...

class ApproveRebuildRequest(_message.Message):
    __slots__ = ("rebuild_id", "reason", "request_id")
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    rebuild_id: str
    reason: str
    request_id: str
    def __init__(self, rebuild_id: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ApproveRebuildResponse(_message.Message):
    __slots__ = ("rebuild",)
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    rebuild: Rebuild
    def __init__(self, rebuild: _Optional[_Union[Rebuild, _Mapping]] = ...) -> None: ...

class GetRebuildRequest(_message.Message):
    __slots__ = ("rebuild_id",)
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    rebuild_id: str
    def __init__(self, rebuild_id: _Optional[str] = ...) -> None: ...

class GetRebuildResponse(_message.Message):
    __slots__ = ("rebuild", "transitions")
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    rebuild: Rebuild
    transitions: _containers.RepeatedCompositeFieldContainer[StateTransition]
    def __init__(self, rebuild: _Optional[_Union[Rebuild, _Mapping]] = ..., transitions: _Optional[_Iterable[_Union[StateTransition, _Mapping]]] = ...) -> None: ...

class ListRebuildsRequest(_message.Message):
    __slots__ = ("detect_id", "state", "page_size", "page_token")
    DETECT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    detect_id: int
    state: RepairState
    page_size: int
    page_token: str
    def __init__(self, detect_id: _Optional[int] = ..., state: _Optional[_Union[RepairState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRebuildsResponse(_message.Message):
    __slots__ = ("rebuilds", "next_page_token")
    REBUILDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    rebuilds: _containers.RepeatedCompositeFieldContainer[Rebuild]
    next_page_token: str
    def __init__(self, rebuilds: _Optional[_Iterable[_Union[Rebuild, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchRebuildRequest(_message.Message):
    __slots__ = ("rebuild_id",)
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    rebuild_id: str
    def __init__(self, rebuild_id: _Optional[str] = ...) -> None: ...

class WatchRebuildResponse(_message.Message):
    __slots__ = ("rebuild",)
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    rebuild: Rebuild
    def __init__(self, rebuild: _Optional[_Union[Rebuild, _Mapping]] = ...) -> None: ...

class CancelRebuildRequest(_message.Message):
    __slots__ = ("rebuild_id", "reason", "request_id")
    REBUILD_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    rebuild_id: str
    reason: str
    request_id: str
    def __init__(self, rebuild_id: _Optional[str] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class CancelRebuildResponse(_message.Message):
    __slots__ = ("rebuild",)
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    rebuild: Rebuild
    def __init__(self, rebuild: _Optional[_Union[Rebuild, _Mapping]] = ...) -> None: ...

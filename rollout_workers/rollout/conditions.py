"""Rollout conditions: Argo's reasons and messages, and the rules for setting them.

Setting a condition that already has the same status and reason changes nothing (so
lastUpdateTime does not churn and status patches stay empty); a condition whose status stays
the same keeps its lastTransitionTime.
"""

from __future__ import annotations

from rollout_workers.api.base import ConditionStatus
from rollout_workers.api.rollout import (
    RolloutCondition,
    RolloutConditionType,
    RolloutStatus,
)

INVALID_SPEC_REASON = "InvalidSpec"
MISSING_FIELD_MESSAGE = "Rollout has missing field '{}'"
SELECT_ALL_MESSAGE = "This rollout is selecting all pods. A non-empty selector is required."
AVAILABLE_REASON = "AvailableReason"
NOT_AVAILABLE_MESSAGE = "Rollout does not have minimum availability"
AVAILABLE_MESSAGE = "Rollout has minimum availability"

REPLICASET_UPDATED_REASON = "ReplicaSetUpdated"
ROLLOUT_PROGRESSING_MESSAGE = 'Rollout "{}" is progressing.'
REPLICASET_PROGRESSING_MESSAGE = 'ReplicaSet "{}" is progressing.'
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
FAILED_RS_CREATE_MESSAGE = 'Failed to create new replica set "{}": {}'
NEW_REPLICASET_REASON = "NewReplicaSetCreated"
NEW_REPLICASET_MESSAGE = 'Created new replica set "{}"'
NEW_REPLICASET_DETAILED_MESSAGE = "Created ReplicaSet {} (revision {})"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
FOUND_NEW_RS_MESSAGE = 'Found new replica set "{}"'
ROLLOUT_UPDATED_REASON = "RolloutUpdated"
ROLLOUT_UPDATED_MESSAGE = "Rollout updated to revision {}"
ROLLOUT_COMPLETED_REASON = "RolloutCompleted"
ROLLOUT_COMPLETED_MESSAGE = "Rollout completed update to revision {} ({}): {}"
ROLLOUT_NOT_COMPLETED_REASON = "RolloutNotCompleted"
ROLLOUT_NOT_COMPLETED_MESSAGE = "Rollout not completed, started update to revision {} ({})"
ROLLOUT_HEALTHY_REASON = "RolloutHealthy"
ROLLOUT_HEALTHY_MESSAGE = "Rollout is healthy"
ROLLOUT_NOT_HEALTHY_MESSAGE = "Rollout is not healthy"
ROLLOUT_ABORTED_REASON = "RolloutAborted"
ROLLOUT_ABORTED_MESSAGE = "Rollout aborted update to revision {}"
ROLLOUT_RETRY_REASON = "RolloutRetry"
ROLLOUT_RETRY_MESSAGE = "Retrying Rollout after abort"
ROLLOUT_PAUSED_REASON = "RolloutPaused"
ROLLOUT_PAUSED_MESSAGE = "Rollout is paused"
REPLICASET_NOT_AVAILABLE_REASON = "ReplicaSetNotAvailable"
ROLLOUT_RESUMED_REASON = "RolloutResumed"
ROLLOUT_RESUMED_MESSAGE = "Rollout is resumed"
ROLLOUT_STEP_COMPLETED_REASON = "RolloutStepCompleted"
ROLLOUT_STEP_COMPLETED_MESSAGE = "Rollout step {}/{} completed ({})"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
SKIP_STEPS_REASON = "SkipSteps"
ROLLBACK_TO_STABLE_MESSAGE = "Rollback to stable ReplicaSets"
ROLLBACK_WITHIN_WINDOW_MESSAGE = "Rollback to active ReplicaSets within RollbackWindow"
ANALYSIS_RUN_FAILED_REASON = "AnalysisRunFailed"
ANALYSIS_RUN_FAILED_MESSAGE = "AnalysisRun '{}' owned by the Rollout '\"{}\"' failed."
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
ROLLOUT_TIMED_OUT_MESSAGE = 'Rollout "{}" has timed out progressing.'
REPLICASET_TIMED_OUT_MESSAGE = 'ReplicaSet "{}" has timed out progressing.'
REPLICASET_COMPLETED_MESSAGE = 'ReplicaSet "{}" has successfully progressed.'
SCALING_REPLICASET_REASON = "ScalingReplicaSet"
SCALING_REPLICASET_MESSAGE = "Scaled {} ReplicaSet {} (revision {}) from {} to {}"
SERVICE_NOT_FOUND_REASON = "ServiceNotFound"
SERVICE_NOT_FOUND_MESSAGE = 'Service "{}" is not found'
SERVICE_REFERENCE_REASON = "ServiceReferenceError"
SWITCH_SERVICE_REASON = "SwitchService"


def new_condition(
    condition_type: RolloutConditionType,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: str,
) -> RolloutCondition:
    return RolloutCondition(
        type=condition_type,
        status=status,
        last_update_time=now,
        last_transition_time=now,
        reason=reason,
        message=message,
    )


def get_condition(
    status: RolloutStatus, condition_type: RolloutConditionType
) -> RolloutCondition | None:
    for condition in status.conditions or []:
        if condition.type == condition_type:
            return condition
    return None


def set_condition(status: RolloutStatus, condition: RolloutCondition) -> bool:
    """Add or replace the condition of its type; False when nothing needed to change."""
    current = get_condition(status, condition.type)
    if current is not None and (current.status, current.reason) == (
        condition.status,
        condition.reason,
    ):
        return False
    if current is not None and current.status == condition.status:
        condition = condition.model_copy(
            update={"last_transition_time": current.last_transition_time}
        )
    status.conditions = [c for c in status.conditions or [] if c.type != condition.type] + [
        condition
    ]
    return True


def remove_condition(status: RolloutStatus, condition_type: RolloutConditionType) -> None:
    if status.conditions is not None:
        status.conditions = [c for c in status.conditions if c.type != condition_type]

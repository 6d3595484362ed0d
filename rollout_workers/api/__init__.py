"""pydantic models of Argo Rollouts' argoproj.io/v1alpha1 resources.

They are the single source of the API: the controller reads and writes objects through them,
and the CRDs in deploy/crds are generated from them (`python -m rollout_workers.api.crdgen`).
"""

from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRun,
    AnalysisTemplate,
    ClusterAnalysisTemplate,
)
from rollout_workers.api.base import ConditionStatus, KubeModel, ObjectMeta
from rollout_workers.api.experiment import Experiment
from rollout_workers.api.rollout import (
    PauseReason,
    Rollout,
    RolloutConditionType,
    RolloutPhase,
)

__all__ = [
    "AnalysisPhase",
    "AnalysisRun",
    "AnalysisTemplate",
    "ClusterAnalysisTemplate",
    "ConditionStatus",
    "Experiment",
    "KubeModel",
    "ObjectMeta",
    "PauseReason",
    "Rollout",
    "RolloutConditionType",
    "RolloutPhase",
]

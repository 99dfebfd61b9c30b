"""Determined's `determined.experimental` on det: the SDK (`client`) over det's REST API."""

from determined.experimental import client
from determined.experimental.client import (
    Checkpoint, CheckpointSortBy, CheckpointState, Determined, DownloadMode, Experiment, ExperimentState, Model,
    ModelVersion, OrderBy, Trial, TrialMetrics, TrialReference, TrialState,
)

__all__ = [
    "Checkpoint", "CheckpointSortBy", "CheckpointState", "Determined", "DownloadMode", "Experiment",
    "ExperimentState", "Model", "ModelVersion", "OrderBy", "Trial", "TrialMetrics", "TrialReference", "TrialState",
    "client",
]

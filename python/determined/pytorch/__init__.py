"""Determined's PyTorch API on det: PyTorchTrial and its context, det's reproducible DataLoader,
and the Trainer that runs a trial's loop (validation, checkpoints, resume, preemption and
data-parallel training) on det's Core API."""

from determined.pytorch._callback import PyTorchCallback
from determined.pytorch._context import CheckpointLoadContext, PyTorchTrialContext
from determined.pytorch._data import DataLoader, TorchData, to_device
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import MetricReducer, Reducer
from determined.pytorch._trainer_utils import Batch, Epoch, TrainUnit
from determined.pytorch._trial import PyTorchTrial
from determined.pytorch._checkpoint import load_trial_from_checkpoint_path
from determined.pytorch._trainer import Trainer, init
from determined.pytorch import samplers

__all__ = [
    "Batch", "CheckpointLoadContext", "DataLoader", "Epoch", "LRScheduler", "MetricReducer", "PyTorchCallback",
    "PyTorchTrial", "PyTorchTrialContext", "Reducer", "TorchData", "TrainUnit", "Trainer", "init",
    "load_trial_from_checkpoint_path", "samplers", "to_device",
]

"""PyTorchTrial: a model written as the hooks Determined's trainer calls."""

import abc
from typing import Any, Dict, Union

import torch

from determined.pytorch._callback import PyTorchCallback
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._reducer import Reducer


class PyTorchTrial(abc.ABC):
    """Subclass it with __init__(context), build_training_data_loader(),
    build_validation_data_loader(), train_batch(batch, epoch_idx, batch_idx) and exactly one of
    evaluate_batch(batch[, batch_idx]) or evaluate_full_dataset(data_loader). The trainer calls
    the hooks by keyword, so their parameter names matter."""

    trial_context_class = PyTorchTrialContext

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        pass

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        pass

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        pass

    @abc.abstractmethod
    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Union[torch.Tensor, Dict[str, Any]]:
        """One batch's step; returns its metrics (a tensor alone is {"loss": tensor})."""

    def evaluate_batch(self, batch: Any, batch_idx: int) -> Dict[str, Any]:
        raise NotImplementedError

    def evaluate_full_dataset(self, data_loader: torch.utils.data.DataLoader) -> Dict[str, Any]:
        raise NotImplementedError

    def evaluation_reducer(self) -> Union[Reducer, Dict[str, Reducer]]:
        """How evaluate_batch's per-batch metrics become one value each: one reducer for all, or
        one per metric name."""
        return Reducer.AVG

    def build_callbacks(self) -> Dict[str, PyTorchCallback]:
        return {}

    def get_batch_length(self, batch: Any) -> int:
        """How many records a batch holds (for reports of records trained)."""
        if isinstance(batch, torch.Tensor):
            return len(batch)
        if isinstance(batch, dict):
            return len(next(iter(batch.values())))
        return len(batch[0])


def _is_overridden(trial: PyTorchTrial, name: str) -> bool:
    """Whether the trial's class defines hook `name` itself, judged by qualified name as
    Determined does."""
    method = getattr(type(trial), name)
    return method.__qualname__.split(".")[0] != PyTorchTrial.__name__

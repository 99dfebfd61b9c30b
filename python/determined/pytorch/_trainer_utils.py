"""Training lengths and periods: Batch(n) and Epoch(n), as Determined's Trainer takes them."""

import enum
import sys
from typing import Any, Collection, Dict, Optional, Union


class TrainUnit:
    """A length or a period in some unit: an int period (`should_stop(n)` when n is a multiple of
    it; below 1, always) or a collection of the counts to stop at."""

    def __init__(self, value: Union[int, Collection[int]]) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, Collection)):
            raise TypeError(f"{type(self).__name__} takes an int or a collection of ints, not {value!r}")
        self.value = value

    def should_stop(self, step_num: int) -> bool:
        if isinstance(self.value, int):
            return self.value < 1 or step_num % self.value == 0
        return step_num in self.value

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.value == other.value  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    @staticmethod
    def _from_length(length: Optional[Dict[str, Any]], global_batch_size: int,
                     what: str) -> Optional["TrainUnit"]:
        """A config length ({batches: N} | {epochs: N} | {records: N}) as the trainer's unit, the
        way Determined's legacy path reads min_validation_period and the like: 0 means never, and
        records become whole batches of the global batch size."""
        if not length:
            return None
        if not isinstance(length, dict) or len(length) != 1:
            raise ValueError(f"{what} must be one of {{batches: N}}, {{epochs: N}} or {{records: N}}, not {length!r}")
        unit, value = next(iter(length.items()))
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{what}.{unit} must be an integer, not {value!r}")
        value = value if value >= 1 else sys.maxsize
        if unit == "batches":
            return Batch(value)
        if unit == "epochs":
            return Epoch(value)
        if unit == "records":
            return Batch(max(value // global_batch_size, 1)) if value != sys.maxsize else Batch(value)
        raise ValueError(f"{what} is measured in batches, epochs or records, not {unit!r}")


class Batch(TrainUnit):
    """A length or period in batches (each the global batch, across all processes)."""


class Epoch(TrainUnit):
    """A length or period in epochs of the training data loader; checked on an epoch's last batch."""


class _Boundary(enum.Enum):
    """Why the training loop stops to do something besides training."""

    TRAIN = "TRAIN"
    VALIDATE = "VALIDATE"
    CHECKPOINT = "CHECKPOINT"
    REPORT = "REPORT"


def _reached(unit: TrainUnit, batches_trained: int, epochs_trained: int, epoch_ended: bool) -> bool:
    """Whether `unit` is due after a batch: Batch units count batches, Epoch units count epochs
    and are due only when an epoch has just ended."""
    if isinstance(unit, Epoch):
        return epoch_ended and unit.should_stop(epochs_trained)
    return unit.should_stop(batches_trained)


def _progress(max_length: TrainUnit, batches_trained: int, epochs_trained: float) -> Optional[float]:
    """How far training is towards max_length, from 0 to 1; None for a schedule of counts."""
    if not isinstance(max_length.value, int) or max_length.value < 1:
        return None
    done = epochs_trained if isinstance(max_length, Epoch) else batches_trained
    return min(1.0, max(0.0, done / max_length.value))


def _length_reached(max_length: TrainUnit, batches_trained: int, epochs_trained: int) -> bool:
    count = epochs_trained if isinstance(max_length, Epoch) else batches_trained
    if isinstance(max_length.value, int):
        return count >= max_length.value
    return count >= max(max_length.value)

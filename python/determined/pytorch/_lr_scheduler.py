"""Learning-rate schedulers the trainer steps for the trial (Determined's LRScheduler)."""

import enum
from typing import Any


class LRScheduler:
    """A torch scheduler and when the trainer steps it. Most trials call
    context.wrap_lr_scheduler(scheduler, step_mode) instead, which returns the scheduler itself."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: "LRScheduler.StepMode", frequency: int = 1) -> None:
        step_mode = LRScheduler.StepMode(step_mode)
        if frequency < 1:
            raise ValueError(f"an LR scheduler's frequency must be at least 1, not {frequency}")
        # ReduceLROnPlateau's step() needs a metric the trainer does not have.
        if type(scheduler).__name__ == "ReduceLROnPlateau" and step_mode != LRScheduler.StepMode.MANUAL_STEP:
            raise ValueError("ReduceLROnPlateau steps on a metric: wrap it with step_mode=LRScheduler.StepMode.MANUAL_STEP "
                             "and call its step(metric) yourself")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> Any:
        return self._scheduler.get_last_lr()

    def state_dict(self) -> Any:
        return self._scheduler.state_dict()

    def load_state_dict(self, state_dict: Any) -> None:
        self._scheduler.load_state_dict(state_dict)

    def _steps_after_batch(self, batch_idx: int, aggregation_frequency: int, epoch_of: Any) -> int:
        """How many times to step after a synchronizing batch `batch_idx` (0-based, global),
        as Determined counts: each batch or epoch of the aggregated window whose number is a
        multiple of the frequency."""
        mode = self._step_mode
        if mode == LRScheduler.StepMode.STEP_EVERY_BATCH:
            first = batch_idx - aggregation_frequency + 1
            return sum(1 for i in range(first, batch_idx + 1) if (i + 1) % self._frequency == 0)
        if mode == LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
            return 1 if (batch_idx + 1) % self._frequency == 0 else 0
        if mode == LRScheduler.StepMode.STEP_EVERY_EPOCH:
            ended = range(epoch_of(batch_idx - aggregation_frequency + 1), epoch_of(batch_idx + 1))
            return sum(1 for e in ended if (e + 1) % self._frequency == 0)
        return 0

import enum
import logging
import os
import pathlib
from typing import Any, Callable, Dict, List, Optional

logger = logging.getLogger("determined.core")


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


# det's names for them: a stop the user's code asks for ends the trial as canceled by the user.
_DET_EXIT_REASONS = {EarlyExitReason.INVALID_HP: "INVALID_HP", EarlyExitReason.USER_REQUESTED_STOP: "USER_CANCELED"}


class TensorboardMode(enum.Enum):
    """AUTO: reported metrics become TensorBoard events. MANUAL: only the files the code writes
    under get_tensorboard_path(). On det the master writes the events of reported training and
    validation metrics itself, in either mode."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


def _numbers(group: str, metrics: Dict[str, Any]) -> Dict[str, float]:
    """The metrics det can store: it keeps numbers (numpy and 0-d tensor scalars convert)."""
    out, dropped = {}, []
    for name, value in metrics.items():
        if value is None and group == "validation":
            # Determined fails such a trial at once: a None is a bug in the validation code.
            raise RuntimeError(f"Validation metric '{name}' returned an invalid scalar value: None")
        try:
            if isinstance(value, (str, bytes, bytearray)):
                raise TypeError
            out[name] = float(value)
        except (TypeError, ValueError):
            dropped.append(name)
    if dropped:
        logger.warning("det stores numeric metrics only; not reported: %s", ", ".join(dropped))
    return out


class TrainContext:
    """Reports training and validation metrics, progress and early exits to the master."""

    def __init__(self, session: Any, tensorboard_mode: TensorboardMode, tensorboard_path: str) -> None:
        self._session = session  # det_core.Context on det; core._context._OffCluster off it
        self._tensorboard_mode = TensorboardMode(tensorboard_mode)
        self._tensorboard_path = pathlib.Path(tensorboard_path)
        self._warned_batch_metrics = False

    def report_training_metrics(self, steps_completed: int, metrics: Dict[str, Any],
                                batch_metrics: Optional[List[Dict[str, Any]]] = None) -> None:
        """Training metrics at `steps_completed` (batches, by convention). det keeps no
        per-batch metrics, so `batch_metrics` are not stored."""
        logger.info(f"report_training_metrics(steps_completed={steps_completed}, metrics={metrics})")
        if batch_metrics is not None and not self._warned_batch_metrics:
            self._warned_batch_metrics = True
            logger.warning("det does not store batch_metrics; only the averaged metrics are reported")
        self._session.report_metrics("training", steps_completed, _numbers("training", metrics))

    def report_validation_metrics(self, steps_completed: int, metrics: Dict[str, Any]) -> None:
        """Validation metrics at `steps_completed`; the searcher reads its metric from these."""
        logger.info(f"report_validation_metrics(steps_completed={steps_completed}, metrics={metrics})")
        self._session.report_metrics("validation", steps_completed, _numbers("validation", metrics))

    def report_metrics(self, group: str, steps_completed: int, metrics: Dict[str, Any]) -> None:
        """Metrics of any group; "training" and "validation" are the built-in series."""
        logger.info(f"report_metrics(group={group}, steps_completed={steps_completed}, metrics={metrics})")
        self._session.report_metrics(group, steps_completed, _numbers(group, metrics))

    def report_progress(self, progress: float) -> None:
        """How far training is, from 0 to 1, for the web UI."""
        if progress < 0 or progress > 1:
            raise ValueError(f"Progress should be between 0 and 1, not {progress}")
        self._session.report_progress(progress)

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        """INVALID_HP: the searcher replaces the trial; USER_REQUESTED_STOP: it ends as canceled."""
        logger.info(f"report_early_exit({reason})")
        self._session.report_early_exit(_DET_EXIT_REASONS[EarlyExitReason(reason)])

    def get_tensorboard_path(self) -> pathlib.Path:
        """Where to write TensorBoard files: on det, the trial's directory that `det tensorboard`
        reads, in the checkpoint storage, so they need no upload."""
        os.makedirs(self._tensorboard_path, exist_ok=True)
        return self._tensorboard_path

    def upload_tensorboard_files(
        self,
        selector: Callable[[pathlib.Path], bool] = lambda _: True,
        mangler: Callable[[pathlib.Path, int], pathlib.Path] = lambda p, __: p,
    ) -> None:
        """Nothing to do on det: get_tensorboard_path() is in the checkpoint storage already."""
        if self._tensorboard_mode == TensorboardMode.AUTO:
            raise RuntimeError("upload_tensorboard_files can only be used in MANUAL mode")

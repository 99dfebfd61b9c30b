"""What a custom search method is made of, in Determined's (0.19.6 to 0.37) shapes."""

import abc
import dataclasses
import enum
import json
import pathlib
import uuid
from typing import Any, Dict, List, Optional, Set, Union


class ExitedReason(enum.Enum):
    """Why a trial ended before the search closed it."""

    ERRORED = "ERRORED"
    USER_CANCELED = "USER_CANCELED"
    INVALID_HP = "INVALID_HP"

    @classmethod
    def _from_event(cls, reason: str) -> "ExitedReason":
        if reason == "EXITED_REASON_INVALID_HP":
            return cls.INVALID_HP
        if reason == "EXITED_REASON_USER_REQUESTED_STOP":
            return cls.USER_CANCELED
        return cls.ERRORED


class Operation(abc.ABC):
    """A decision of the search method, carried out by the master."""

    @abc.abstractmethod
    def _to_json(self) -> Dict[str, Any]:
        pass


class Create(Operation):
    """Create a trial with these hyperparameters. `request_id` names it in later events."""

    def __init__(self, request_id: uuid.UUID, hparams: Dict[str, Any], checkpoint: Optional[Any] = None) -> None:
        if checkpoint is not None:
            raise ValueError("det's custom searcher starts every trial from scratch: checkpoint must be None")
        self.request_id = request_id
        self.hparams = hparams
        self.checkpoint = checkpoint

    def _to_json(self) -> Dict[str, Any]:
        return {"create_trial": {"request_id": str(self.request_id), "hyperparams": json.dumps(self.hparams)}}


class ValidateAfter(Operation):
    """Train the trial until its total training reaches `length` (in the searcher's unit), then
    validate: an on_validation_completed event follows."""

    def __init__(self, request_id: uuid.UUID, length: int) -> None:
        self.request_id = request_id
        self.length = int(length)

    def _to_json(self) -> Dict[str, Any]:
        return {"trial_operation": {"validate_after": {"request_id": str(self.request_id), "length": self.length}}}


class Close(Operation):
    """Close the trial: it stops (checkpointing first) and an on_trial_closed event follows."""

    def __init__(self, request_id: uuid.UUID) -> None:
        self.request_id = request_id

    def _to_json(self) -> Dict[str, Any]:
        return {"close_trial": {"request_id": str(self.request_id)}}


class Shutdown(Operation):
    """End the search once no trial is open: COMPLETED, or CANCELED (`cancel`), or ERROR (`failure`)."""

    def __init__(self, cancel: bool = False, failure: bool = False) -> None:
        self.cancel = cancel
        self.failure = failure

    def _to_json(self) -> Dict[str, Any]:
        return {"shut_down": {"cancel": self.cancel, "failure": self.failure}}


class Progress(Operation):
    """How far the whole search is, from 0 to 1 (shown with the experiment)."""

    def __init__(self, progress: float) -> None:
        self.progress = float(progress)

    def _to_json(self) -> Dict[str, Any]:
        return {"set_searcher_progress": {"progress": self.progress}}


@dataclasses.dataclass
class SearcherState:
    """What the runner knows of the search; a SearchMethod reads it and must not change it."""

    failures: Set[uuid.UUID] = dataclasses.field(default_factory=set)
    trial_progress: Dict[uuid.UUID, float] = dataclasses.field(default_factory=dict)
    trials_closed: Set[uuid.UUID] = dataclasses.field(default_factory=set)
    trials_created: Set[uuid.UUID] = dataclasses.field(default_factory=set)
    last_event_id: int = 0
    experiment_completed: bool = False
    experiment_failed: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {
            "failures": sorted(str(r) for r in self.failures),
            "trial_progress": {str(k): v for k, v in self.trial_progress.items()},
            "trials_closed": sorted(str(r) for r in self.trials_closed),
            "trials_created": sorted(str(r) for r in self.trials_created),
            "last_event_id": self.last_event_id,
            "experiment_completed": self.experiment_completed,
            "experiment_failed": self.experiment_failed,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "SearcherState":
        return cls(
            failures={uuid.UUID(r) for r in d.get("failures", [])},
            trial_progress={uuid.UUID(k): float(v) for k, v in d.get("trial_progress", {}).items()},
            trials_closed={uuid.UUID(r) for r in d.get("trials_closed", [])},
            trials_created={uuid.UUID(r) for r in d.get("trials_created", [])},
            last_event_id=int(d.get("last_event_id", 0)),
            experiment_completed=bool(d.get("experiment_completed", False)),
            experiment_failed=bool(d.get("experiment_failed", False)),
        )


class SearchMethod(abc.ABC):
    """A search algorithm run by a SearchRunner: each event in, a list of operations out.

    save_method_state and load_method_state keep the method's own state in the runner's
    directory, so that a runner started again continues where it stopped."""

    @abc.abstractmethod
    def initial_operations(self, searcher_state: SearcherState) -> List[Operation]:
        pass

    @abc.abstractmethod
    def on_trial_created(self, searcher_state: SearcherState, request_id: uuid.UUID) -> List[Operation]:
        pass

    @abc.abstractmethod
    def on_validation_completed(
        self, searcher_state: SearcherState, request_id: uuid.UUID, metric: float, train_length: int
    ) -> List[Operation]:
        pass

    @abc.abstractmethod
    def on_trial_closed(self, searcher_state: SearcherState, request_id: uuid.UUID) -> List[Operation]:
        pass

    @abc.abstractmethod
    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> List[Operation]:
        pass

    @abc.abstractmethod
    def progress(self, searcher_state: SearcherState) -> float:
        pass

    def save_method_state(self, path: pathlib.Path) -> None:
        """Writes the method's own state under `path` (a directory); nothing by default."""

    def load_method_state(self, path: pathlib.Path) -> None:
        """Reads what save_method_state wrote; nothing by default."""


def _as_uuid(text: Union[str, uuid.UUID]) -> uuid.UUID:
    return text if isinstance(text, uuid.UUID) else uuid.UUID(text)

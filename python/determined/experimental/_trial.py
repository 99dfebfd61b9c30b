"""Determined's Trial over det's REST: its state, metrics, checkpoints and logs."""

import enum
import json
from typing import Any, Dict, Iterable, List, Optional, Union

from determined.common import util
from determined.experimental._checkpoint import Checkpoint
from determined.experimental._metrics import TrialMetrics
from determined.experimental._ordering import CheckpointSortBy, OrderBy, sorted_checkpoints
from determined.experimental._session import Session

# Reports asked for at a time: a trial may hold more than one reply should carry.
_METRICS_PAGE = 10000


class TrialState(enum.Enum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_ERROR = "STOPPING_ERROR"
    CANCELED = "CANCELED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    QUEUED = "QUEUED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"


def state_of(text: Optional[str], states: Any) -> Any:
    """det's "STATE_RUNNING" as Determined's enum member (ACTIVE for an unset state)."""
    return states((text or "STATE_ACTIVE").replace("STATE_", "", 1))


class Trial:
    """A trial: `id`, `experiment_id`, `hparams`, `state` and `summary_metrics` (the latest
    training and validation values; call reload() to refresh them)."""

    def __init__(self, trial_id: int, session: Session) -> None:
        self.id = trial_id
        self._session = session
        self.experiment_id: Optional[int] = None
        self.hparams: Optional[Dict[str, Any]] = None
        self.summary_metrics: Optional[Dict[str, Any]] = None
        self.state: Optional[TrialState] = None

    @classmethod
    def _from_json(cls, session: Session, t: Dict[str, Any]) -> "Trial":
        trial = cls(int(t["id"]), session)
        trial._hydrate(t)
        return trial

    def _hydrate(self, t: Dict[str, Any]) -> None:
        self.experiment_id = int(t.get("experiment_id", 0))
        self.hparams = json.loads(t.get("hparams") or "{}")
        self.state = state_of(t.get("state"), TrialState)
        self.summary_metrics = {"avg_metrics": dict(t.get("latest_training") or {}),
                                "validation_metrics": dict(t.get("latest_validation") or {})}

    def reload(self) -> None:
        self._hydrate(self._session.get(f"/api/v1/trials/{self.id}")["trial"])

    def get_experiment(self) -> Any:
        from determined.experimental._experiment import Experiment

        if self.experiment_id is None:
            self.reload()
        return Experiment._fetch(self._session, int(self.experiment_id or 0))

    def iter_logs(self, follow: bool = False, head: Optional[int] = None, tail: Optional[int] = None,
                  **filters: Any) -> Iterable[str]:
        """The trial's log lines, oldest first (det's master keeps them all; `head` or `tail`
        of them). det filters nothing on the server: a filter argument is refused."""
        if follow or filters:
            raise NotImplementedError("det's SDK reads a trial's stored logs only: follow them with "
                                      "`det trial logs -f ID`, and filter them in Python")
        lines: List[str] = []
        after = 0
        while True:
            page = self._session.get(f"/api/v1/trials/{self.id}/logs", after_id=after, limit=1000).get("logs", [])
            lines.extend(entry.get("text", "") for entry in page)
            if len(page) < 1000 or (head is not None and len(lines) >= head):
                break
            after = int(page[-1]["id"])
        if head is not None:
            return iter(lines[:head])
        return iter(lines[-tail:] if tail else lines)

    def logs(self, *args: Any, **kwargs: Any) -> Iterable[str]:
        return self.iter_logs(*args, **kwargs)

    def kill(self) -> None:
        raise NotImplementedError("det stops trials through their experiment: kill the experiment "
                                  f"{self.experiment_id} (Experiment.kill()), or let its searcher stop the trial")

    def _checkpoints(self) -> List[Checkpoint]:
        reply = self._session.get(f"/api/v1/trials/{self.id}/checkpoints")
        return [Checkpoint._from_json(self._session, c) for c in reply.get("checkpoints", [])]

    def list_checkpoints(self, sort_by: Optional[Union[str, CheckpointSortBy]] = None,
                         order_by: Optional[OrderBy] = None, max_results: Optional[int] = None) -> List[Checkpoint]:
        """The trial's completed checkpoints, sorted by the searcher metric (best first) unless
        `sort_by` and `order_by` say otherwise; with a metric, those without a validation are left out."""
        experiment = self.get_experiment()
        completed = [c for c in self._checkpoints() if c.state and c.state.value == "COMPLETED"]
        return sorted_checkpoints(completed, sort_by, order_by, experiment._metric, experiment._smaller_is_better,
                                  max_results)

    def top_checkpoint(self, sort_by: Optional[str] = None, smaller_is_better: Optional[bool] = None) -> Checkpoint:
        order_by = None
        if sort_by:
            order_by = OrderBy.ASC if smaller_is_better else OrderBy.DESC
        checkpoints = self.list_checkpoints(sort_by=sort_by, order_by=order_by, max_results=1)
        if not checkpoints:
            raise ValueError("No checkpoints found for criteria.")
        return checkpoints[0]

    def select_checkpoint(self, latest: bool = False, best: bool = False, uuid: Optional[str] = None,
                          sort_by: Optional[str] = None, smaller_is_better: Optional[bool] = None) -> Checkpoint:
        if sum([latest, best, uuid is not None]) != 1:
            raise AssertionError("Exactly one of latest, best, or uuid must be set")
        if uuid is not None:
            return next(c for c in self._checkpoints() if c.uuid == uuid)
        if latest:
            completed = [c for c in self._checkpoints() if c.state and c.state.value == "COMPLETED"]
            if not completed:
                raise ValueError(f"trial {self.id} has no checkpoint")
            return max(completed, key=lambda c: c.steps_completed or 0)
        return self.top_checkpoint(sort_by, smaller_is_better)

    def iter_metrics(self, group: str) -> Iterable[TrialMetrics]:
        """The reports of metric `group` ("training", "validation" or any name the trial
        reported), in the order of their steps."""
        offset = 0
        while True:
            # The master answers a page at a time; a short page is the last.
            page = self._session.get(f"/api/v1/trials/{self.id}/metrics", group=group, offset=offset,
                                     limit=_METRICS_PAGE).get("metrics", [])
            for r in page:
                yield TrialMetrics._from_json(r)
            if len(page) < _METRICS_PAGE:
                return
            offset += len(page)

    def stream_metrics(self, group: str) -> Iterable[TrialMetrics]:
        return self.iter_metrics(group)

    def stream_training_metrics(self) -> Iterable[TrialMetrics]:
        return self.iter_metrics(util._LEGACY_TRAINING)

    def stream_validation_metrics(self) -> Iterable[TrialMetrics]:
        return self.iter_metrics(util._LEGACY_VALIDATION)

    def metric_groups(self) -> List[str]:
        """det's addition: the names of the metric groups the trial reported."""
        reply = self._session.get(f"/api/v1/trials/{self.id}/metrics/groups")
        return [r["group"] for r in reply.get("metrics", [])]

    def __repr__(self) -> str:
        return f"Trial(id={self.id})"


# Kept for Determined's name of a trial object built from an id alone.
TrialReference = Trial

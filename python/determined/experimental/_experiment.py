"""Determined's Experiment over det's REST: its state, trials and checkpoints, and its controls."""

import enum
import sys
import time
from typing import Any, Dict, List, Optional, Set, Union

from determined.experimental._checkpoint import Checkpoint
from determined.experimental._ordering import CheckpointSortBy, OrderBy, sorted_checkpoints
from determined.experimental._session import Session
from determined.experimental._trial import Trial, state_of


def _parsed_toml(text: str) -> Optional[Dict[str, Any]]:
    """det stores an experiment's config as TOML (YAML is converted): tomllib reads it, from
    Python 3.11 on."""
    try:
        import tomllib
    except ImportError:
        return None
    return tomllib.loads(text)


class ExperimentState(enum.Enum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"
    DELETED = "DELETED"
    DELETING = "DELETING"
    DELETE_FAILED = "DELETE_FAILED"
    STOPPING_KILLED = "STOPPING_KILLED"
    QUEUED = "QUEUED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"


TERMINAL_STATES = {ExperimentState.COMPLETED, ExperimentState.CANCELED, ExperimentState.DELETED,
                   ExperimentState.ERROR}


class Experiment:
    """An experiment: `id`, `name`, `state`, `config` (a dict of det's stored TOML, on Python
    3.11 and later; its text is `config_text`), `labels`, `archived`, `progress`, `description`,
    `notes`, `project_id`."""

    def __init__(self, experiment_id: int, session: Session) -> None:
        self._id = experiment_id
        self._session = session
        self.config: Optional[Dict[str, Any]] = None
        self.config_text: Optional[str] = None
        self.state: Optional[ExperimentState] = None
        self.labels: Optional[Set[str]] = None
        self.archived: Optional[bool] = None
        self.name: Optional[str] = None
        self.progress: Optional[float] = None
        self.description: Optional[str] = None
        self.notes: Optional[str] = None
        self.project_id: Optional[int] = None
        self.workspace_id: Optional[int] = None
        self._metric = ""
        self._smaller_is_better = True

    @property
    def id(self) -> int:
        return self._id

    @classmethod
    def _fetch(cls, session: Session, experiment_id: int) -> "Experiment":
        experiment = cls(experiment_id, session)
        experiment.reload()
        return experiment

    @classmethod
    def _from_json(cls, session: Session, e: Dict[str, Any]) -> "Experiment":
        experiment = cls(int(e["id"]), session)
        experiment._hydrate(e)
        return experiment

    def _hydrate(self, e: Dict[str, Any]) -> None:
        if e.get("config"):
            self.config_text = e["config"]
            self.config = _parsed_toml(self.config_text)
        self.state = state_of(e.get("state"), ExperimentState)
        self.labels = set(e.get("labels") or []) or None
        self.archived = bool(e.get("archived", False))
        self.name = e.get("name")
        self.progress = float(e.get("progress", 0.0))
        self.description = e.get("description", "")
        self.notes = e.get("notes", "")
        self.project_id = int(e.get("project_id", 0)) or None
        self._metric = e.get("metric", "")
        self._smaller_is_better = bool(e.get("smaller_is_better", False))

    def reload(self) -> None:
        self._hydrate(self._session.get(f"/api/v1/experiments/{self.id}")["experiment"])

    def _post(self, action: str) -> None:
        self._session.post(f"/api/v1/experiments/{self.id}/{action}")

    def activate(self) -> None:
        self._post("activate")

    def pause(self) -> None:
        self._post("pause")

    def kill(self) -> None:
        self._post("kill")

    def cancel(self) -> None:
        raise NotImplementedError("det has no cancel that lets the trials checkpoint first: pause() the "
                                  "experiment (its trials checkpoint), then kill() it")

    def delete(self) -> None:
        self._session.request("DELETE", f"/api/v1/experiments/{self.id}")

    def set_name(self, name: str) -> None:
        self._session.request("PATCH", f"/api/v1/experiments/{self.id}", {"name": name})
        self.name = name

    def set_description(self, description: str) -> None:
        self._session.request("PATCH", f"/api/v1/experiments/{self.id}", {"description": description})
        self.description = description

    def set_notes(self, notes: str) -> None:
        self._session.request("PATCH", f"/api/v1/experiments/{self.id}", {"notes": notes})
        self.notes = notes

    def list_trials(self, sort_by: Any = None, order_by: Optional[OrderBy] = None) -> List[Trial]:
        """The experiment's trials, by id (det sorts them no other way)."""
        if sort_by is not None and getattr(sort_by, "value", sort_by) not in ("ID", "SORT_BY_ID", "id"):
            raise NotImplementedError("det lists an experiment's trials by id only")
        reply = self._session.get(f"/api/v1/experiments/{self.id}")
        self._hydrate(reply["experiment"])
        trials = [Trial._from_json(self._session, t) for t in reply.get("trials", [])]
        return trials[::-1] if order_by in (OrderBy.DESC,) else trials

    def get_trials(self, sort_by: Any = None, order_by: Optional[OrderBy] = None) -> List[Trial]:
        return self.list_trials(sort_by, order_by)

    def iter_trials(self, sort_by: Any = None, order_by: Optional[OrderBy] = None) -> Any:
        return iter(self.list_trials(sort_by, order_by))

    def await_first_trial(self, interval: float = 0.1) -> Trial:
        while True:
            trials = self.list_trials()
            if trials:
                return trials[0]
            time.sleep(interval)

    def wait(self, interval: float = 5.0) -> ExperimentState:
        """Waits until the experiment ends and returns its final state; a paused one raises."""
        waited = 0.0
        while True:
            self.reload()
            if self.state in TERMINAL_STATES:
                return self.state
            if self.state == ExperimentState.PAUSED:
                raise ValueError(f"Experiment {self.id} is in paused state. Make sure the experiment is active.")
            time.sleep(interval)
            waited += interval
            if waited % 60 == 0:
                print(f"Waiting for Experiment {self.id} to complete. Elapsed {waited / 60} minutes", file=sys.stderr)

    def list_checkpoints(self, sort_by: Optional[Union[str, CheckpointSortBy]] = None,
                         order_by: Optional[OrderBy] = None, max_results: Optional[int] = None) -> List[Checkpoint]:
        """The experiment's completed checkpoints, sorted by the searcher metric (best first)
        unless `sort_by` and `order_by` say otherwise."""
        if not self._metric:
            self.reload()
        reply = self._session.get(f"/api/v1/experiments/{self.id}/checkpoints")
        completed = [c for c in (Checkpoint._from_json(self._session, c) for c in reply.get("checkpoints", []))
                     if c.state and c.state.value == "COMPLETED"]
        return sorted_checkpoints(completed, sort_by, order_by, self._metric, self._smaller_is_better, max_results)

    def top_checkpoint(self, sort_by: Optional[str] = None, smaller_is_better: Optional[bool] = None) -> Checkpoint:
        order_by = None
        if sort_by:
            order_by = OrderBy.ASC if smaller_is_better else OrderBy.DESC
        checkpoints = self.list_checkpoints(sort_by=sort_by, order_by=order_by, max_results=1)
        if not checkpoints:
            raise AssertionError(f"No checkpoints found for experiment {self.id}")
        return checkpoints[0]

    def top_n_checkpoints(self, limit: int, sort_by: Optional[str] = None,
                          smaller_is_better: Optional[bool] = None) -> List[Checkpoint]:
        order_by = None
        if sort_by:
            order_by = OrderBy.ASC if smaller_is_better else OrderBy.DESC
        return self.list_checkpoints(sort_by=sort_by, order_by=order_by, max_results=limit)

    def __repr__(self) -> str:
        return f"Experiment(id={self.id})"

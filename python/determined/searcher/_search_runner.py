"""Runs a SearchMethod against det's master: reads the search's events, answers with operations.

det keeps every event until the runner acknowledges it, and answers a post only once it is
committed, so a master restarted after a crash delivers again what the runner has not answered,
and a runner started again (same searcher_dir) posts again what it had decided but not seen
answered; the master ignores a post it has already carried out.
"""

import base64
import io
import json
import logging
import os
import pathlib
import shutil
import tarfile
import uuid
from typing import Any, Dict, List, Optional, Union

from determined.searcher._search_method import (
    ExitedReason,
    Operation,
    Progress,
    SearcherState,
    SearchMethod,
    _as_uuid,
)
from determined.searcher._session import DetError, Session

logger = logging.getLogger("determined.searcher")

STATE_FILE = "state.json"
METHOD_STATE_DIR = "method_state"

# experiment_state values that end a search
_TERMINAL = {"STATE_COMPLETED": False, "STATE_CANCELED": False, "STATE_ERROR": True, "STATE_DELETED": False}


def _field(obj: Dict[str, Any], snake: str) -> Any:
    """A field by its proto name, or the camelCase name Determined's master uses."""
    if snake in obj:
        return obj[snake]
    head, *rest = snake.split("_")
    return obj.get(head + "".join(w.capitalize() for w in rest))


def _model_definition(model_dir: Union[str, pathlib.Path]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        root = pathlib.Path(model_dir)
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    return base64.b64encode(buffer.getvalue()).decode()


class SearchRunner:
    """Drives one experiment whose searcher.name is "custom" with `search_method`."""

    def __init__(self, search_method: SearchMethod, searcher_dir: Optional[Union[str, pathlib.Path]] = None,
                 session: Optional[Session] = None) -> None:
        self.search_method = search_method
        self.searcher_dir = pathlib.Path(searcher_dir or "searcher_dir")
        self.session = session or Session()
        self.state = SearcherState()
        self.experiment_id: Optional[int] = None
        self._unanswered: Optional[Dict[str, Any]] = None  # a post not yet seen answered
        self._version = 0  # of the method's saved state (METHOD_STATE_DIR.N)

    # -- the runner's own state, so that it can be started again --------------------------------
    def _save(self) -> None:
        # The method's state goes into a new directory that state.json then names, replaced in one
        # rename: a runner killed in between finds the method and last_event_id of one moment.
        self.searcher_dir.mkdir(parents=True, exist_ok=True)
        self._version += 1
        method_dir = self.searcher_dir / f"{METHOD_STATE_DIR}.{self._version}"
        shutil.rmtree(method_dir, ignore_errors=True)
        method_dir.mkdir()
        self.search_method.save_method_state(method_dir)
        tmp = self.searcher_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({"experiment_id": self.experiment_id, "state": self.state.to_dict(),
                                   "unanswered": self._unanswered, "method_state": method_dir.name}))
        os.replace(tmp, self.searcher_dir / STATE_FILE)
        for old in self.searcher_dir.glob(METHOD_STATE_DIR + ".*"):
            if old != method_dir:
                shutil.rmtree(old, ignore_errors=True)

    def _load(self) -> bool:
        path = self.searcher_dir / STATE_FILE
        if not path.exists():
            return False
        saved = json.loads(path.read_text())
        self.experiment_id = saved.get("experiment_id")
        self.state = SearcherState.from_dict(saved.get("state", {}))
        self._unanswered = saved.get("unanswered")
        method_dir = self.searcher_dir / saved.get("method_state", METHOD_STATE_DIR)
        self._version = int(method_dir.suffix[1:] or 0)
        method_dir.mkdir(parents=True, exist_ok=True)
        self.search_method.load_method_state(method_dir)
        return self.experiment_id is not None

    # -- events in, operations out ---------------------------------------------------------------
    def _operations_for(self, event: Dict[str, Any]) -> List[Operation]:
        method, state = self.search_method, self.state
        if _field(event, "initial_operations") is not None:
            return method.initial_operations(state)
        created = _field(event, "trial_created")
        if created is not None:
            request_id = _as_uuid(_field(created, "request_id"))
            state.trials_created.add(request_id)
            state.trial_progress[request_id] = 0.0
            return method.on_trial_created(state, request_id)
        validated = _field(event, "validation_completed")
        if validated is not None:
            return method.on_validation_completed(state, _as_uuid(_field(validated, "request_id")),
                                                  float(_field(validated, "metric")),
                                                  int(_field(validated, "validate_after_length")))
        progress = _field(event, "trial_progress")
        if progress is not None:
            state.trial_progress[_as_uuid(_field(progress, "request_id"))] = float(_field(progress, "partial_units"))
            return []
        closed = _field(event, "trial_closed")
        if closed is not None:
            request_id = _as_uuid(_field(closed, "request_id"))
            state.trials_closed.add(request_id)
            return method.on_trial_closed(state, request_id)
        exited = _field(event, "trial_exited_early")
        if exited is not None:
            request_id = _as_uuid(_field(exited, "request_id"))
            reason = ExitedReason._from_event(str(_field(exited, "exited_reason")))
            if reason == ExitedReason.ERRORED:
                state.failures.add(request_id)
            return method.on_trial_exited_early(state, request_id, reason)
        logger.warning("skipping a searcher event det's client does not know: %s", event)
        return []

    def _post(self) -> None:
        assert self._unanswered is not None and self.experiment_id is not None
        try:
            self.session.request("POST", f"/api/v1/experiments/{self.experiment_id}/searcher_operations",
                                 self._unanswered)
        except DetError as e:
            if e.status is None or e.status >= 500:
                raise  # not answered: posted again by a runner started again
            # Refused (the experiment ended, or an operation is wrong): posting it again would be
            # refused again. The next read of the events says how the search goes on.
            logger.warning("the master refused this runner's operations: %s", e)
        self._unanswered = None
        self._save()

    def run_experiment(self, experiment_id: int) -> None:
        """Drives experiment `experiment_id` until it ends."""
        self.experiment_id = experiment_id
        path = f"/api/v1/experiments/{experiment_id}/searcher_events"
        while True:
            if self._unanswered is not None:
                self._post()
            events = _field(self.session.request("GET", path), "searcher_events") or []
            operations: List[Operation] = []
            last_id = 0
            for event in events:
                inactive = _field(event, "experiment_inactive")
                if inactive is not None:
                    state_name = str(_field(inactive, "experiment_state"))
                    if state_name in _TERMINAL:
                        self.state.experiment_completed = True
                        self.state.experiment_failed = _TERMINAL[state_name]
                        self._save()
                        logger.info("experiment %s ended: %s", experiment_id, state_name)
                        return
                    continue
                event_id = int(_field(event, "id"))
                last_id = max(last_id, event_id)
                if event_id <= self.state.last_event_id:
                    continue  # answered before this runner was started again
                operations += self._operations_for(event)
                self.state.last_event_id = event_id
            if last_id == 0:
                continue  # the long poll ended without events
            operations.append(Progress(self.search_method.progress(self.state)))
            self._unanswered = {"experiment_id": experiment_id,
                                "searcher_operations": [op._to_json() for op in operations],
                                "triggered_by_event": {"id": last_id}}
            self._save()  # before posting: a runner started again posts it again
            self._post()


class LocalSearchRunner(SearchRunner):
    """Creates the experiment and drives it from this process; started again with the same
    searcher_dir, it continues the experiment it created."""

    def run(self, exp_config: Union[str, pathlib.Path], model_dir: Optional[Union[str, pathlib.Path]] = None) -> int:
        """`exp_config`: the path of a TOML (or Determined YAML) config whose searcher.name is
        "custom". Returns the experiment's id once it has ended."""
        if self._load():
            logger.info("continuing experiment %s from %s", self.experiment_id, self.searcher_dir)
        else:
            config_path = str(exp_config)
            body: Dict[str, Any] = {"config": pathlib.Path(config_path).read_text(), "config_path": config_path}
            if model_dir is not None:
                body["model_definition"] = _model_definition(model_dir)
            created = self.session.request("POST", "/api/v1/experiments", body)
            self.experiment_id = int(created["experiment"]["id"])
            self._save()
            logger.info("created experiment %s", self.experiment_id)
        assert self.experiment_id is not None
        self.run_experiment(self.experiment_id)
        return self.experiment_id


class RemoteSearchRunner(SearchRunner):
    """Drives an experiment created elsewhere (det submit, the web UI): run it anywhere the
    master can be reached, for example as a det command given DET_USER_TOKEN."""

    def run(self, experiment_id: int) -> int:
        if self._load() and self.experiment_id != experiment_id:
            # searcher_dir holds another experiment's search: this one starts from its beginning.
            logger.warning("%s held experiment %s's state; starting experiment %s afresh",
                           self.searcher_dir, self.experiment_id, experiment_id)
            self.state, self._unanswered = SearcherState(), None
        self.run_experiment(experiment_id)
        return experiment_id

"""Determined's Python SDK (`from determined.experimental import client`) over det's REST API.

    client.login(master="http://det-master:8080", user="alice", password="...")
    exp = client.create_experiment("const.yaml", "model_dir/")
    exp.wait()
    best = exp.top_checkpoint()
    path = best.download()

Without login() the first call logs in as det's CLI does: DET_MASTER, then DET_USER and DET_PASS,
DET_USER_TOKEN, or the session `det user login` saved. What det does not do is refused with
NotImplementedError and a sentence saying what it does instead.
"""

import functools
import json
import pathlib
from typing import Any, Callable, Dict, Iterable, List, Optional, TypeVar, Union, cast

from determined.experimental._checkpoint import Checkpoint, CheckpointState, DownloadMode
from determined.experimental._experiment import Experiment, ExperimentState
from determined.experimental._metrics import TrialMetrics
from determined.experimental._model import Model, ModelVersion
from determined.experimental._model_definition import packed
from determined.experimental._ordering import CheckpointSortBy, OrderBy
from determined.experimental._session import APIError, Session, b64, quoted
from determined.experimental._trial import Trial, TrialReference, TrialState

# det's names for the states Determined filters experiments by.
_STATE_NAMES = {s: "STATE_" + s.value for s in ExperimentState}


class Determined:
    """One master and one user's session: every function of this module, as methods."""

    def __init__(self, master: Optional[str] = None, user: Optional[str] = None, password: Optional[str] = None,
                 cert_path: Optional[str] = None, cert_name: Optional[str] = None, noverify: bool = False) -> None:
        if cert_name is not None:
            raise NotImplementedError("det checks the master's certificate against the name in its URL; "
                                      "cert_name cannot override it")
        self._session = Session(master, user, password, cert_path, noverify)

    def create_experiment(self, config: Union[str, pathlib.Path, Dict[str, Any]], model_dir: Optional[str] = None,
                          includes: Optional[Iterable[Union[str, pathlib.Path]]] = None,
                          project_id: Optional[int] = None, template: Optional[str] = None) -> Experiment:
        """Submits an experiment: `config` is a dict or the path of a YAML (or det's TOML) file;
        `model_dir` and `includes` become its model definition."""
        if template is not None:
            raise NotImplementedError("det has no config templates: put the template's settings in the config")
        if isinstance(config, dict):
            # JSON is YAML: the master reads it as Determined's YAML, naming lines of this text.
            text, path = json.dumps(config, indent=2), "<config dict>.yaml"
        else:
            path = str(config)
            with open(path) as f:
                text = f.read()
        body: Dict[str, Any] = {"config": text, "config_path": path,
                                "model_definition": b64(packed(model_dir, includes))}
        if project_id is not None:
            body["project_id"] = project_id
        reply = self._session.post("/api/v1/experiments", body)
        return Experiment._from_json(self._session, reply["experiment"])

    def get_experiment(self, experiment_id: int) -> Experiment:
        return Experiment._fetch(self._session, int(experiment_id))

    def list_experiments(self, sort_by: Any = None, order_by: Optional[OrderBy] = None,
                         experiment_ids: Optional[List[int]] = None, labels: Optional[List[str]] = None,
                         users: Optional[List[str]] = None, states: Optional[List[ExperimentState]] = None,
                         name: Optional[str] = None, project_id: Optional[int] = None) -> List[Experiment]:
        """Every experiment that matches (det's master filters by one label and one user; the
        rest is filtered here)."""
        if labels is not None and len(labels) > 1:
            raise NotImplementedError("det filters experiments by one label at a time")
        if users is not None and len(users) > 1:
            raise NotImplementedError("det filters experiments by one user at a time")
        params: Dict[str, Any] = {"label": labels[0] if labels else None, "user": users[0] if users else None,
                                  "project_id": project_id, "archived": "any",
                                  "state": [_STATE_NAMES[ExperimentState(s)] for s in states or []] or None}
        if sort_by is not None:
            params["sort_by"] = str(getattr(sort_by, "value", sort_by)).replace("SORT_BY_", "").lower()
        if order_by is not None:
            params["order_by"] = "desc" if order_by == OrderBy.DESC else "asc"
        found: List[Experiment] = []
        while True:
            page = self._session.get("/api/v1/experiments", offset=len(found), limit=1000, **params)
            batch = page.get("experiments", [])
            found.extend(Experiment._from_json(self._session, e) for e in batch)
            if len(batch) < 1000:
                break
        if experiment_ids is not None:
            found = [e for e in found if e.id in set(experiment_ids)]
        if name is not None:
            found = [e for e in found if name in (e.name or "")]
        return found

    def get_trial(self, trial_id: int) -> Trial:
        return Trial._from_json(self._session, self._session.get(f"/api/v1/trials/{int(trial_id)}")["trial"])

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        reply = self._session.get(f"/api/v1/checkpoints/{quoted(uuid)}")
        return Checkpoint._from_json(self._session, reply["checkpoint"])

    def get_model(self, identifier: Union[str, int]) -> Model:
        """A registered model, by name (det names its models; an id is refused)."""
        if isinstance(identifier, int):
            raise NotImplementedError("det finds models by name: pass the model's name")
        return Model._fetch(self._session, identifier)

    def create_model(self, name: str, description: Optional[str] = "",
                     metadata: Optional[Dict[str, Any]] = None) -> Model:
        if metadata:
            raise NotImplementedError("det's models have a name, a description and labels, no metadata")
        self._session.post("/api/v1/models", {"name": name, "description": description or ""})
        return Model._fetch(self._session, name)

    def list_models(self, *args: Any, **kwargs: Any) -> List[Model]:
        if args or any(v is not None for v in kwargs.values()):
            raise NotImplementedError("det lists every model; filter the list in Python")
        models = self._session.get("/api/v1/models").get("models", [])
        return [Model._fetch(self._session, m["name"]) for m in models]

    def get_models(self, *args: Any, **kwargs: Any) -> List[Model]:
        return self.list_models(*args, **kwargs)

    def get_session_username(self) -> str:
        return self._session.get("/api/v1/me").get("user", {}).get("username", "")

    def iter_trials_metrics(self, trial_ids: List[int], group: str) -> Iterable[TrialMetrics]:
        for trial_id in trial_ids:
            yield from self.get_trial(trial_id).iter_metrics(group)

    def stream_trials_metrics(self, trial_ids: List[int], group: str) -> Iterable[TrialMetrics]:
        return self.iter_trials_metrics(trial_ids, group)


_determined: Optional[Determined] = None

F = TypeVar("F", bound=Callable[..., Any])


def _require_singleton(fn: F) -> F:
    """Logs in as the CLI would on the first call that needs a session, when login() was not called."""

    @functools.wraps(fn)
    def with_session(*args: Any, **kwargs: Any) -> Any:
        global _determined
        if _determined is None:
            _determined = Determined()
        return fn(*args, **kwargs)

    return cast(F, with_session)


def login(master: Optional[str] = None, user: Optional[str] = None, password: Optional[str] = None,
          cert_path: Optional[str] = None, cert_name: Optional[str] = None, noverify: bool = False) -> None:
    """Sets up the session every other function of this module uses; call it once, first."""
    global _determined
    if _determined is not None:
        raise ValueError(
            "You can only call login() once, before any other calls to any functions in the client "
            "module.  If you have reason to connect to multiple masters, you should use explicit "
            "client.Determined() objects, which each expose the same functions as this module.")
    _determined = Determined(master, user, password, cert_path, cert_name, noverify)


def _client() -> Determined:
    assert _determined is not None
    return _determined


@_require_singleton
def create_experiment(config: Union[str, pathlib.Path, Dict[str, Any]], model_dir: Optional[str] = None,
                      includes: Optional[Iterable[Union[str, pathlib.Path]]] = None,
                      project_id: Optional[int] = None, template: Optional[str] = None) -> Experiment:
    return _client().create_experiment(config, model_dir, includes, project_id, template)


@_require_singleton
def get_experiment(experiment_id: int) -> Experiment:
    return _client().get_experiment(experiment_id)


@_require_singleton
def list_experiments(sort_by: Any = None, order_by: Optional[OrderBy] = None,
                     experiment_ids: Optional[List[int]] = None, labels: Optional[List[str]] = None,
                     users: Optional[List[str]] = None, states: Optional[List[ExperimentState]] = None,
                     name: Optional[str] = None, project_id: Optional[int] = None) -> List[Experiment]:
    return _client().list_experiments(sort_by, order_by, experiment_ids, labels, users, states, name, project_id)


@_require_singleton
def get_trial(trial_id: int) -> Trial:
    return _client().get_trial(trial_id)


@_require_singleton
def get_checkpoint(uuid: str) -> Checkpoint:
    return _client().get_checkpoint(uuid)


@_require_singleton
def get_model(identifier: Union[str, int]) -> Model:
    return _client().get_model(identifier)


@_require_singleton
def create_model(name: str, description: Optional[str] = "", metadata: Optional[Dict[str, Any]] = None) -> Model:
    return _client().create_model(name, description, metadata)


@_require_singleton
def list_models(*args: Any, **kwargs: Any) -> List[Model]:
    return _client().list_models(*args, **kwargs)


@_require_singleton
def get_models(*args: Any, **kwargs: Any) -> List[Model]:
    return _client().get_models(*args, **kwargs)


@_require_singleton
def get_session_username() -> str:
    return _client().get_session_username()


@_require_singleton
def iter_trials_metrics(trial_ids: List[int], group: str) -> Iterable[TrialMetrics]:
    return _client().iter_trials_metrics(trial_ids, group)


@_require_singleton
def stream_trials_metrics(trial_ids: List[int], group: str) -> Iterable[TrialMetrics]:
    return _client().stream_trials_metrics(trial_ids, group)


def _not_on_det(what: str, instead: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"det has no {what}: {instead}")

    refused.__name__ = what
    return refused


create_user = _not_on_det("create_user in the SDK", "use `det user create`")
list_users = _not_on_det("list_users in the SDK", "use `det user list`")
logout = _not_on_det("logout in the SDK", "use `det user logout`")
get_workspace = _not_on_det("get_workspace in the SDK", "use `det workspace list`")
list_workspaces = _not_on_det("list_workspaces in the SDK", "use `det workspace list`")
stream_trials_training_metrics = _not_on_det("stream_trials_training_metrics",
                                             "use iter_trials_metrics(trial_ids, 'training')")
stream_trials_validation_metrics = _not_on_det("stream_trials_validation_metrics",
                                               "use iter_trials_metrics(trial_ids, 'validation')")

__all__ = [
    "APIError", "Checkpoint", "CheckpointSortBy", "CheckpointState", "Determined", "DownloadMode", "Experiment",
    "ExperimentState", "Model", "ModelVersion", "OrderBy", "Trial", "TrialMetrics", "TrialReference", "TrialState",
    "create_experiment", "create_model", "get_checkpoint", "get_experiment", "get_model", "get_models",
    "get_session_username", "get_trial", "iter_trials_metrics", "list_experiments", "list_models", "login",
    "stream_trials_metrics",
]

"""Determined's Checkpoint over det's REST: its record, and its files downloaded through the master."""

import dataclasses
import enum
import json
import pathlib
from typing import Any, Dict, Optional

from determined.experimental._session import Session, quoted


def _inside(target: pathlib.Path, name: str) -> pathlib.Path:
    """Where file `name` of a checkpoint goes under `target`: a name the master sends must stay
    beneath it on any system (no "..", no drive or backslash, no absolute path)."""
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or ":" in name
            or any(part in ("", ".", "..") for part in parts)):
        raise ValueError(f"refusing to download checkpoint file {name!r}: not a plain path inside the checkpoint")
    return target.joinpath(*parts)


class CheckpointState(enum.Enum):
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    DELETED = "DELETED"
    PARTIALLY_DELETED = "PARTIALLY_DELETED"


class DownloadMode(enum.Enum):
    """det serves a checkpoint's files through its master: every mode downloads that way."""

    AUTO = "AUTO"
    DIRECT = "DIRECT"
    MASTER = "MASTER"


# det's checkpoint states: its files are there, or they were deleted.
_STATES = {"CHECKPOINT_STATE_COMPLETED": CheckpointState.COMPLETED, "CHECKPOINT_STATE_DELETED": CheckpointState.DELETED}


@dataclasses.dataclass
class CheckpointTrainingMetadata:
    experiment_config: Dict[str, Any]
    experiment_id: int
    trial_id: int
    hparams: Dict[str, Any]
    validation_metrics: Dict[str, Any]


class Checkpoint:
    """A checkpoint a trial saved: `uuid`, `state`, `resources` (file -> bytes), `metadata`
    (its metadata.json, once downloaded), `training` and `steps_completed`."""

    def __init__(self, session: Session, uuid: str) -> None:
        self._session = session
        self.uuid = uuid
        self.task_id: Optional[str] = None
        self.allocation_id: Optional[str] = None
        self.report_time: Optional[str] = None
        self.resources: Optional[Dict[str, int]] = None
        self.metadata: Optional[Dict[str, Any]] = None
        self.state: Optional[CheckpointState] = None
        self.training: Optional[CheckpointTrainingMetadata] = None
        self.steps_completed: Optional[int] = None

    @classmethod
    def _from_json(cls, session: Session, c: Dict[str, Any]) -> "Checkpoint":
        checkpoint = cls(session, c["uuid"])
        checkpoint._hydrate(c)
        return checkpoint

    def _hydrate(self, c: Dict[str, Any]) -> None:
        self.allocation_id = c.get("allocation_id") or None
        self.task_id = str(c["trial_id"]) if c.get("trial_id") else None
        self.report_time = c.get("report_time")
        self.resources = {name: int(size) for name, size in (c.get("resources") or {}).items()}
        self.state = _STATES.get(c.get("state", ""), CheckpointState.ERROR)
        self.steps_completed = int(c.get("steps_completed", 0))
        self.training = CheckpointTrainingMetadata(
            experiment_config={}, experiment_id=int(c.get("experiment_id", 0)), trial_id=int(c.get("trial_id", 0)),
            hparams={}, validation_metrics={"avgMetrics": dict(c.get("validation_metrics") or {})})

    def reload(self) -> None:
        self._hydrate(self._session.get(f"/api/v1/checkpoints/{quoted(self.uuid)}")["checkpoint"])

    def download(self, path: Optional[str] = None, mode: DownloadMode = DownloadMode.AUTO) -> str:
        """Downloads the checkpoint's files into `path` (default checkpoints/<uuid>) and returns
        that directory. A directory that already holds its metadata.json is taken as downloaded."""
        if self.state is None:
            self.reload()
        if self.state != CheckpointState.COMPLETED:
            raise ValueError(f"Only COMPLETED checkpoints can be downloaded; checkpoint {self.uuid} is "
                             f"{self.state.value if self.state else 'unknown'}")
        target = pathlib.Path(path) if path is not None else pathlib.Path("checkpoints", self.uuid)
        if not (target / "metadata.json").exists():
            # metadata.json last: a download cut short is not taken for a finished one.
            names = sorted(self.resources or {}, key=lambda n: n == "metadata.json")
            for name in names:
                local = _inside(target, name)
                data = self._session.request_bytes(
                    "GET", f"/api/v1/checkpoints/{quoted(self.uuid)}/files/{quoted(name)}")
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_bytes(data)
        metadata = target / "metadata.json"
        if metadata.exists():
            with open(metadata) as f:
                self.metadata = json.load(f)
        return str(target)

    def write_metadata_file(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.metadata or {}, f, indent=2)

    def delete(self) -> None:
        self._session.request("DELETE", f"/api/v1/checkpoints/{quoted(self.uuid)}")

    def add_metadata(self, metadata: Dict[str, Any]) -> None:
        raise NotImplementedError("det keeps a checkpoint's metadata in its metadata.json, written by the "
                                  "trial that saved it; the master cannot change it")

    def remove_metadata(self, keys: Any) -> None:
        raise NotImplementedError("det keeps a checkpoint's metadata in its metadata.json, written by the "
                                  "trial that saved it; the master cannot change it")

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid})"


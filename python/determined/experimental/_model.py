"""Determined's model registry over det's REST: models and their versions."""

import datetime
import json
from typing import Any, Dict, List, Optional

from determined.experimental._checkpoint import Checkpoint
from determined.experimental._metrics import _time
from determined.experimental._ordering import OrderBy
from determined.experimental._session import Session, quoted

_FIXED = "det's model registry keeps a model's name, description, labels and versions as they were created"


class ModelVersion:
    """Version `model_version` of model `model_name`: its `checkpoint`, `name` and `metadata`."""

    def __init__(self, session: Session, model_version: int, model_name: str) -> None:
        self._session = session
        self.model_name = model_name
        self.model_version = model_version
        self.model_id: Optional[int] = None
        self.checkpoint: Optional[Checkpoint] = None
        self.metadata: Optional[Dict[str, Any]] = None
        self.name: Optional[str] = None
        self.comment: Optional[str] = None
        self.notes: Optional[str] = None

    @classmethod
    def _from_json(cls, session: Session, v: Dict[str, Any]) -> "ModelVersion":
        version = cls(session, int(v.get("version", 0)), v.get("model_name", ""))
        version.model_id = int(v.get("model_id", 0))
        version.name = v.get("name", "")
        version.metadata = json.loads(v.get("metadata") or "{}")
        version.comment = version.notes = ""
        if v.get("checkpoint"):
            version.checkpoint = Checkpoint._from_json(session, v["checkpoint"])
        elif v.get("checkpoint_uuid"):
            version.checkpoint = Checkpoint(session, v["checkpoint_uuid"])
        return version

    def set_name(self, name: str) -> None:
        raise NotImplementedError(_FIXED)

    def set_notes(self, notes: str) -> None:
        raise NotImplementedError(_FIXED)

    def delete(self) -> None:
        raise NotImplementedError("det deletes a model with all its versions (Model.delete()), not one version")

    def __repr__(self) -> str:
        return f"ModelVersion(model={self.model_name}, version={self.model_version})"


class Model:
    """A registered model: `name`, `model_id`, `description`, `labels`, `username`, `creation_time`."""

    def __init__(self, session: Session, name: str) -> None:
        self._session = session
        self.name = name
        self.model_id: Optional[int] = None
        self.description: Optional[str] = None
        self.creation_time: Optional[datetime.datetime] = None
        self.last_updated_time: Optional[datetime.datetime] = None
        self.metadata: Optional[Dict[str, Any]] = None
        self.labels: Optional[List[str]] = None
        self.username: Optional[str] = None
        self.workspace_id: Optional[int] = None
        self.archived: Optional[bool] = None
        self._versions: List[ModelVersion] = []

    @classmethod
    def _fetch(cls, session: Session, name: str) -> "Model":
        model = cls(session, name)
        model.reload()
        return model

    def _hydrate(self, m: Dict[str, Any]) -> None:
        self.model_id = int(m.get("id", 0))
        self.name = m.get("name", self.name)
        self.description = m.get("description", "")
        self.labels = list(m.get("labels") or [])
        self.username = m.get("owner", "")
        self.creation_time = _time(m.get("created_at"))
        self.last_updated_time = self.creation_time
        self.metadata = {}
        self.archived = False

    def reload(self) -> None:
        reply = self._session.get(f"/api/v1/models/{quoted(self.name)}")
        self._hydrate(reply["model"])
        self._versions = [ModelVersion._from_json(self._session, v) for v in reply.get("versions", [])]

    def get_version(self, version: int = -1) -> Optional[ModelVersion]:
        """Version `version`, or the latest for -1; None when there is none."""
        self.reload()
        if not self._versions:
            return None
        if version == -1:
            return max(self._versions, key=lambda v: v.model_version)
        return next((v for v in self._versions if v.model_version == version), None)

    def list_versions(self, order_by: OrderBy = OrderBy.DESC) -> List[ModelVersion]:
        self.reload()
        return sorted(self._versions, key=lambda v: v.model_version, reverse=order_by == OrderBy.DESC)

    def get_versions(self, order_by: OrderBy = OrderBy.DESC) -> List[ModelVersion]:
        return self.list_versions(order_by)

    def register_version(self, checkpoint_uuid: str) -> ModelVersion:
        reply = self._session.post(f"/api/v1/models/{quoted(self.name)}/versions", {"checkpoint_uuid": checkpoint_uuid})
        return ModelVersion._from_json(self._session, reply["version"])

    def delete(self) -> None:
        self._session.request("DELETE", f"/api/v1/models/{quoted(self.name)}")

    def add_metadata(self, metadata: Dict[str, Any]) -> None:
        raise NotImplementedError(_FIXED)

    def remove_metadata(self, keys: List[str]) -> None:
        raise NotImplementedError(_FIXED)

    def set_labels(self, labels: List[str]) -> None:
        raise NotImplementedError(_FIXED)

    def set_description(self, description: str) -> None:
        raise NotImplementedError(_FIXED)

    def archive(self) -> None:
        raise NotImplementedError("det's model registry does not archive models")

    def unarchive(self) -> None:
        raise NotImplementedError("det's model registry does not archive models")

    def move_to_workspace(self, workspace_name: str) -> None:
        raise NotImplementedError("det's models belong to no workspace")

    def __repr__(self) -> str:
        return f"Model(name={self.name})"

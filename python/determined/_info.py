"""What det tells a trial's process about itself, in Determined's ClusterInfo shape.

Determined reads these from files its container runtime writes; det gives a Core API process
environment variables instead (see examples/core-api/det_core.py), so they are read from there.
"""

import json
import os
from typing import Any, Dict, List, Optional


class TrialInfo:
    """The trial the current process trains."""

    def __init__(
        self,
        trial_id: int,
        experiment_id: int,
        trial_seed: int,
        hparams: Dict[str, Any],
        config: Dict[str, Any],
        steps_completed: int,
        trial_run_id: int,
        debug: bool,
        inter_node_network_interface: Optional[str],
    ) -> None:
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.trial_seed = trial_seed
        self.hparams = hparams
        # Private in Determined too: the experiment config's shape is not a stable API.
        self._config = config
        self._steps_completed = steps_completed
        self._trial_run_id = trial_run_id
        self._debug = debug
        self._inter_node_network_interface = inter_node_network_interface

    @property
    def config(self) -> Dict[str, Any]:
        """The experiment config as a dict (DET_EXPERIMENT_CONFIG), with Determined's defaults for
        the keys its training code reads; {} when det could not pass it (see the trial's log)."""
        return self._config


class ClusterInfo:
    """Properties of the task this process belongs to, while it runs on det."""

    def __init__(
        self,
        master_url: str,
        cluster_id: str,
        agent_id: str,
        slot_ids: List[int],
        task_id: str,
        allocation_id: str,
        session_token: str,
        task_type: str,
        master_cert_name: Optional[str] = None,
        master_cert_file: Optional[str] = None,
        latest_checkpoint: Optional[str] = None,
        trial_info: Optional[TrialInfo] = None,
        container_addrs: Optional[List[str]] = None,
        container_rank: int = 0,
        gpu_uuids: Optional[List[str]] = None,
    ) -> None:
        self.master_url = master_url
        self.cluster_id = cluster_id
        self.agent_id = agent_id
        self.slot_ids = slot_ids
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.session_token = session_token
        self.task_type = task_type
        self.master_cert_name = master_cert_name
        self.master_cert_file = master_cert_file
        self._latest_checkpoint = latest_checkpoint
        self._trial_info = trial_info
        self._container_addrs = container_addrs or ["127.0.0.1"]
        self._container_rank = container_rank
        self._gpu_uuids = gpu_uuids or []

    @property
    def latest_checkpoint(self) -> Optional[str]:
        """The storage id (uuid) of the checkpoint to continue from, or None."""
        return self._latest_checkpoint

    @property
    def user_data(self) -> Dict[str, Any]:
        """The config's `data` field."""
        return self.trial._config.get("data") or {}

    @property
    def trial(self) -> TrialInfo:
        assert self._trial_info is not None
        return self._trial_info

    @property
    def container_addrs(self) -> List[str]:
        """Every container's address, by container rank."""
        return self._container_addrs

    @property
    def container_rank(self) -> int:
        return self._container_rank

    @property
    def container_slot_counts(self) -> List[int]:
        # det does not say how many slots the other containers have: as many as this one's.
        return [len(self.slot_ids)] * len(self._container_addrs)

    @property
    def gpu_uuids(self) -> List[str]:
        return self._gpu_uuids


def _listed(value: Optional[str]) -> List[str]:
    """det's comma-separated lists ("0,1"); empty or unset is []."""
    return [part for part in (value or "").split(",") if part]


def _from_env() -> Optional[ClusterInfo]:
    env = os.environ
    # A Core API trial's process has all of these; a det command, notebook or shell has no trial
    # and no trial routes to call, so it counts as off-cluster, as does a process outside det.
    if not all(env.get(k) for k in ("DET_MASTER", "DET_TRIAL_ID", "DET_ALLOCATION_ID", "DET_ALLOCATION_TOKEN")):
        return None
    allocation_id = env["DET_ALLOCATION_ID"]  # "<trial id>.<run number>"
    latest = env.get("DET_LATEST_CHECKPOINT")  # a checkpoint's directory, named by its uuid
    # The experiment config as JSON; det leaves it out when it is too large for the environment.
    config = json.loads(env.get("DET_EXPERIMENT_CONFIG") or "{}")
    trial = TrialInfo(
        trial_id=int(env["DET_TRIAL_ID"]),
        experiment_id=int(env.get("DET_EXPERIMENT_ID", "0")),
        trial_seed=int(env.get("DET_TRIAL_SEED", "0")),
        hparams=json.loads(env.get("DET_HPARAMS") or "{}"),
        config=config,
        # The steps of the checkpoint the run resumes from, when the master knows them.
        steps_completed=int(env.get("DET_STEPS_COMPLETED") or 0),
        trial_run_id=int(allocation_id.rpartition(".")[2] or 0),
        debug=bool(config.get("debug")),
        inter_node_network_interface=None,
    )
    return ClusterInfo(
        master_url=env["DET_MASTER"],
        cluster_id="",  # det's master has no cluster id
        agent_id=env.get("DET_AGENT_ID", ""),
        slot_ids=[int(s) for s in _listed(env.get("DET_SLOT_IDS"))],
        task_id=env["DET_TRIAL_ID"],
        allocation_id=allocation_id,
        # The run's allocation token is what authenticates this process's calls on det.
        session_token=env["DET_ALLOCATION_TOKEN"],
        task_type="TRIAL",
        master_cert_file=env.get("DET_MASTER_CERT_FILE") or None,
        latest_checkpoint=os.path.basename(latest.rstrip("/")) if latest else None,
        trial_info=trial,
        container_addrs=_listed(env.get("DET_CONTAINER_ADDRS")),
        container_rank=int(env.get("DET_CONTAINER_RANK") or 0),
        # The agent names a run's GPUs by UUID in CUDA_VISIBLE_DEVICES.
        gpu_uuids=_listed(env.get("CUDA_VISIBLE_DEVICES")),
    )


def get_cluster_info() -> Optional[ClusterInfo]:
    """The ClusterInfo of the det trial this process runs for, or None when not on det."""
    return _from_env()

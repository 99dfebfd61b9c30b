import contextlib
import enum
import hashlib
import json
import logging
import os
import pathlib
import shutil
import uuid
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from determined.core._distributed import DistributedContext

logger = logging.getLogger("determined.core")


class DownloadMode(enum.Enum):
    """LocalWorkersShareDownload: the processes of a machine call download() in step and its
    local chief copies once. NoSharedDownload: each process copies on its own."""

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def _merge_metadata(all_metadata: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The ranks' metadata as one: dicts under one key merge; other values must agree."""
    merged: Dict[str, Any] = {}
    conflicts = set()

    def merge(into: Dict[str, Any], new: Dict[str, Any], prefix: str) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key, {}), dict):
                merge(into.setdefault(key, {}), value, f"{prefix}/{key}")
            elif key in into and into[key] != value:
                conflicts.add(f"{prefix}/{key}")
            else:
                into[key] = value

    for metadata in all_metadata:
        merge(merged, metadata, "")
    if conflicts:
        raise RuntimeError(f"refusing to upload with metadata conflicts: {sorted(conflicts)}")
    return merged


def _list_files(root: str, selector: Optional[Callable[[str], bool]]) -> List[str]:
    """The files under `root`, relative to it, that `selector` (if any) keeps."""
    names = []
    for folder, _, files in os.walk(root):
        for name in files:
            relative = os.path.relpath(os.path.join(folder, name), root)
            if selector is None or selector(relative):
                names.append(relative)
    return sorted(names)


def _copy_files(source: str, target: str, names: List[str]) -> None:
    os.makedirs(target, exist_ok=True)
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
        shutil.copy2(os.path.join(source, name), os.path.join(target, name))


def _md5(path: str) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class CheckpointContext:
    """Saves and loads checkpoints. On det a checkpoint is a directory named by its uuid (its
    storage id) in the experiment's checkpoint storage, which every agent mounts: stores write
    there directly and restores read there without a copy."""

    def __init__(self, session: Any, distributed: DistributedContext) -> None:
        self._session = session  # det_core.Context on det; core._context._OffCluster off it
        self._dist = distributed

    @contextlib.contextmanager
    def store_path(self, metadata: Optional[Dict[str, Any]] = None, *,
                   shard: bool = False) -> Iterator[Tuple[pathlib.Path, str]]:
        """Yields (directory, storage_id): what is written there becomes a checkpoint, recorded
        with `metadata` (which must hold steps_completed) when the block ends. shard=False: the
        chief only; shard=True: every process, in step, writing its own files."""
        if not shard and self._dist.rank != 0:
            raise RuntimeError(
                "cannot call CheckpointContext.store_path(shard=False) from non-chief worker "
                f"(rank={self._dist.rank})"
            )
        metadata = _merge_metadata(self._dist.allgather(metadata or {})) if shard else dict(metadata or {})
        if "steps_completed" not in metadata:
            raise ValueError(
                "metadata for reported checkpoints, in the current implementation, requires a "
                "'steps_completed' item, which has not been provided"
            )
        if self._dist.rank != 0:
            path, storage_id = self._dist.broadcast(None)
            yield pathlib.Path(path), storage_id
            self._dist.allgather(None)  # this process's files are written
            return
        storage_id = str(uuid.uuid4())
        with self._session.checkpoint(int(metadata["steps_completed"]), metadata=metadata,
                                      checkpoint_uuid=storage_id) as path:
            if shard:
                self._dist.broadcast((path, storage_id))
            yield pathlib.Path(path), storage_id
            if shard:
                self._dist.allgather(None)  # every process's files are written
        logger.info(f"Reported checkpoint to master {storage_id}")

    def upload(self, ckpt_dir: Optional[Union[str, os.PathLike]], metadata: Optional[Dict[str, Any]] = None, *,
               shard: bool = False, selector: Optional[Callable[[str], bool]] = None) -> str:
        """Copies `ckpt_dir`'s files (those `selector` keeps, given paths relative to it) into a
        new checkpoint; returns its storage id. shard=True: every process calls it, in step, and
        the checkpoint holds the union of their files (ckpt_dir=None: nothing from this one)."""
        ckpt_dir = None if ckpt_dir is None else os.fspath(ckpt_dir)
        if not shard:
            if ckpt_dir is None:
                raise RuntimeError(
                    "cannot call .upload(ckpt_dir=None, shard=False), which would result in doing nothing at all"
                )
            with self.store_path(metadata) as (path, storage_id):
                _copy_files(ckpt_dir, os.fspath(path), _list_files(ckpt_dir, selector))
            return storage_id
        names = self._shard_files(ckpt_dir, selector)
        with self.store_path(metadata, shard=True) as (path, storage_id):
            if ckpt_dir is not None:
                _copy_files(ckpt_dir, os.fspath(path), names)
        return storage_id

    def _shard_files(self, ckpt_dir: Optional[str], selector: Optional[Callable[[str], bool]]) -> List[str]:
        """The files this process uploads in a sharded upload, as Determined decides: processes
        naming one directory (same inode) upload it once, from the lowest rank, unless they
        select files; a file several processes offer must have the same contents in each."""
        if selector is not None and ckpt_dir is None:
            raise RuntimeError("ckpt_dir has to be provided if selector is not None")
        if not any(self._dist.allgather(ckpt_dir is not None)):
            raise RuntimeError(
                "cannot call .upload(ckpt_dir=None, shard=True), from all ranks; "
                "at least one rank must have a valid ckpt_dir"
            )
        directory = None
        if ckpt_dir is not None:
            st = os.stat(ckpt_dir)
            directory = (st.st_dev, st.st_ino)
        directories = self._dist.allgather(directory)
        wants = selector is not None or (directory is not None and directories.index(directory) == self._dist.rank)
        names = _list_files(ckpt_dir, selector) if wants and ckpt_dir is not None else []
        offered = self._dist.allgather(names)
        shared = {name for name, count in Counter(n for ns in offered for n in ns).items() if count > 1}
        digests = self._dist.allgather({n: _md5(os.path.join(ckpt_dir, n)) for n in names if n in shared})
        conflicts = sorted(n for n in shared if len({d[n] for d in digests if n in d}) > 1)
        if conflicts:
            raise RuntimeError(f"refusing to upload with files conflicts: {conflicts}")
        first_offer = {}
        for rank, ns in enumerate(offered):
            for n in ns:
                first_offer.setdefault(n, rank)
        return [n for n in names if first_offer[n] == self._dist.rank]

    def _path_of(self, storage_id: str) -> str:
        """The directory of checkpoint `storage_id`: in the experiment's storage, or the one this
        trial started from (a warm start may name another experiment's)."""
        latest = self._session.latest_checkpoint
        if latest and os.path.basename(latest.rstrip("/")) == storage_id and os.path.isdir(latest):
            return latest
        path = os.path.join(self._session.checkpoint_dir, storage_id)
        if not os.path.isdir(path):
            raise FileNotFoundError(
                f"checkpoint {storage_id} is neither in {self._session.checkpoint_dir}, this experiment's "
                "checkpoint storage, nor the checkpoint this trial started from; a trial on det reads "
                "other checkpoints only from a directory (`det checkpoint download UUID` writes one)"
            )
        return path

    @contextlib.contextmanager
    def restore_path(self, storage_id: str,
                     download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *,
                     selector: Optional[Callable[[str], bool]] = None) -> Iterator[pathlib.Path]:
        """Yields the checkpoint's directory, read in place (as Determined's shared_fs storage
        does), so any process may call it at any time and `selector` has nothing to filter."""
        yield pathlib.Path(self._path_of(storage_id))

    def download(self, storage_id: str, ckpt_dir: Union[str, os.PathLike],
                 download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *,
                 selector: Optional[Callable[[str], bool]] = None) -> None:
        """Copies the checkpoint's files (those `selector` keeps) into `ckpt_dir`."""
        source, target = self._path_of(storage_id), os.fspath(ckpt_dir)
        if DownloadMode(download_mode) == DownloadMode.NoSharedDownload:
            _copy_files(source, target, _list_files(source, selector))
            return
        # One copy per machine: of every file that some process of the machine selects.
        wanted = self._dist.allgather_local(_list_files(source, selector))
        if self._dist.local_rank == 0:
            _copy_files(source, target, sorted(set().union(*wanted)))
        self._dist.broadcast_local(None)  # the copy is complete

    def get_metadata(self, storage_id: str) -> Dict[str, Any]:
        """The checkpoint's metadata.json: what it was stored with, and det's own fields."""
        path = os.path.join(self._path_of(storage_id), "metadata.json")
        if not os.path.exists(path):
            return {}
        with open(path) as f:
            return json.load(f)

    def delete(self, storage_id: str) -> None:
        raise NotImplementedError(
            "a trial cannot delete checkpoints on det: its allocation token does not authorize "
            f"DELETE /api/v1/checkpoints/{storage_id}, which needs a user's token; "
            f"use `det checkpoint delete {storage_id}`"
        )

"""Data for trials: det's DataLoader, whose batches are a pure function of the epoch, so that a
run that stops anywhere (pause, preemption, crash) resumes at the very next batch, and
to_device, which moves a batch to the process's device."""

import math
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import torch
import torch.utils.data

TorchData = Union[Dict[str, torch.Tensor], Sequence[torch.Tensor], torch.Tensor]


def to_device(data: Any, device: Union[str, torch.device], warned_types: Optional[set] = None) -> Any:
    """`data` on `device`: tensors and numeric numpy arrays (made tensors), inside dicts, lists and
    tuples, to any depth; anything else as it is."""
    if isinstance(data, dict):
        return {k: to_device(v, device, warned_types) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and not hasattr(data, "_fields"):
        return type(data)(to_device(v, device, warned_types) for v in data)
    if isinstance(data, tuple):  # a namedtuple
        return type(data)(*(to_device(v, device, warned_types) for v in data))
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return torch.from_numpy(data).to(device)
    if hasattr(data, "to"):
        return data.to(device)
    return data


class _EpochBatches:
    """The batches (lists of dataset indices) of each epoch. A shuffled order comes from a
    generator seeded by (seed, epoch) alone, so any epoch can be built again at any time."""

    def __init__(self, dataset_len: int, batch_size: int, drop_last: bool, shuffle: bool, seed: int,
                 batch_sampler: Optional[Any]) -> None:
        self._dataset_len = dataset_len
        self._batch_size = batch_size
        self._drop_last = drop_last
        self._shuffle = shuffle
        self._seed = seed
        self._batch_sampler = batch_sampler  # a user's: iterated again for each epoch

    def __len__(self) -> int:
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        if self._drop_last:
            return self._dataset_len // self._batch_size
        return math.ceil(self._dataset_len / self._batch_size)

    def of_epoch(self, epoch: int) -> List[List[int]]:
        if self._batch_sampler is not None:
            if hasattr(self._batch_sampler, "set_epoch"):
                self._batch_sampler.set_epoch(epoch)
            return [list(batch) for batch in self._batch_sampler]
        if self._shuffle:
            generator = torch.Generator().manual_seed((self._seed * 1_000_003 + epoch) % (1 << 63))
            order = torch.randperm(self._dataset_len, generator=generator).tolist()
        else:
            order = list(range(self._dataset_len))
        size = self._batch_size
        batches = [order[i:i + size] for i in range(0, len(order), size)]
        if self._drop_last and batches and len(batches[-1]) < size:
            batches.pop()
        return batches


class _ShardedBatches(torch.utils.data.Sampler):
    """One process's batches: the k-th (counting from `skip`) is batch k·replicas + rank of the
    stream of epochs, repeated forever or only the first epoch. Skipping costs nothing: the
    position is computed, not iterated to."""

    def __init__(self, epochs: _EpochBatches, repeat: bool, skip: int, num_replicas: int, rank: int) -> None:
        self._epochs = epochs
        self._repeat = repeat
        self._skip = skip
        self._replicas = num_replicas
        self._rank = rank

    def __len__(self) -> int:
        per_epoch = len(self._epochs)
        if self._repeat:
            return math.ceil(per_epoch / self._replicas)
        return max(0, len(range(self._rank, per_epoch, self._replicas)) - self._skip)

    def __iter__(self) -> Iterator[List[int]]:
        per_epoch = len(self._epochs)
        if per_epoch == 0:
            raise ValueError("the data loader has no batches: its dataset is smaller than one batch, or empty")
        k, cached_epoch, cached = self._skip, -1, []
        while True:
            epoch, position = divmod(k * self._replicas + self._rank, per_epoch)
            if epoch > 0 and not self._repeat:
                return
            if epoch != cached_epoch:
                cached_epoch, cached = epoch, self._epochs.of_epoch(epoch)
            yield cached[position]
            k += 1


class DataLoader:
    """torch.utils.data.DataLoader's arguments, for the trainer to shard across processes and to
    resume where a run stopped. Its shuffled order depends only on the trial's seed (or on
    `generator`'s initial seed) and the epoch. IterableDataset is refused: its position cannot
    be recovered."""

    def __init__(self, dataset: torch.utils.data.Dataset, batch_size: Optional[int] = 1, shuffle: bool = False,
                 sampler: Optional[torch.utils.data.Sampler] = None, batch_sampler: Optional[torch.utils.data.Sampler] = None,
                 num_workers: int = 0, collate_fn: Optional[Callable] = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Optional[Callable] = None,
                 multiprocessing_context: Any = None, generator: Optional[torch.Generator] = None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False) -> None:
        if isinstance(dataset, torch.utils.data.IterableDataset):
            raise ValueError("det's DataLoader needs a map-style Dataset: an IterableDataset cannot resume where it "
                             "stopped. Build a torch DataLoader and call "
                             "context.experimental.disable_dataset_reproducibility_checks()")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is None and batch_size is None:
            raise ValueError("det's DataLoader needs a batch_size (or a batch_sampler): the trainer counts batches")
        if sampler is not None:
            batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.batch_sampler = batch_sampler
        self.drop_last = drop_last
        self.generator = generator
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers

    def _epochs(self, seed: int) -> _EpochBatches:
        if self.generator is not None:
            seed = self.generator.initial_seed()
        return _EpochBatches(len(self.dataset), self.batch_size or 1, self.drop_last, self.shuffle, seed,
                             self.batch_sampler)

    def __len__(self) -> int:
        return len(self._epochs(0))

    def get_data_loader(self, repeat: bool = False, skip: int = 0, num_replicas: int = 1, rank: int = 0,
                        seed: int = 0) -> torch.utils.data.DataLoader:
        """The torch DataLoader of one process: its shard of the batches, from its `skip`-th on,
        repeated over epochs when `repeat`. Its workers are seeded from a generator of its own,
        so that loading never draws from the trial's global random state."""
        extra = {}
        if self.num_workers > 0:
            extra = {"prefetch_factor": self.prefetch_factor or 2, "persistent_workers": self.persistent_workers}
        return torch.utils.data.DataLoader(
            self.dataset,
            batch_sampler=_ShardedBatches(self._epochs(seed), repeat, skip, num_replicas, rank),
            num_workers=self.num_workers,
            collate_fn=self.collate_fn,
            pin_memory=self.pin_memory,
            timeout=self.timeout,
            worker_init_fn=self.worker_init_fn,
            multiprocessing_context=self.multiprocessing_context,
            generator=torch.Generator().manual_seed(seed),
            **extra,
        )

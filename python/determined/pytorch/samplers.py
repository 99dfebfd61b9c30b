"""Samplers for building a reproducible torch DataLoader yourself (with
context.experimental.disable_dataset_reproducibility_checks()), in Determined's order:
shuffle, repeat, shard, batch, skip."""

from typing import Iterator, List, Sized

import torch
import torch.utils.data


class ReproducibleShuffleSampler(torch.utils.data.Sampler):
    """A new shuffle each epoch, from `seed` and the epoch alone."""

    def __init__(self, data_source: Sized, seed: int) -> None:
        self._data_source = data_source
        self._seed = seed
        self._epoch = 0

    def __len__(self) -> int:
        return len(self._data_source)

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self._seed * 1_000_003 + self._epoch)
        self._epoch += 1
        return iter(torch.randperm(len(self._data_source), generator=generator).tolist())


class RepeatSampler(torch.utils.data.Sampler):
    """Its sampler, over and over."""

    def __init__(self, sampler: torch.utils.data.Sampler) -> None:
        self._sampler = sampler

    def __len__(self) -> int:
        return len(self._sampler)

    def __iter__(self) -> Iterator:
        while True:
            yield from self._sampler


class DistributedSampler(torch.utils.data.Sampler):
    """Every num_workers-th item of its sampler, from the rank-th."""

    def __init__(self, sampler: torch.utils.data.Sampler, num_workers: int, rank: int) -> None:
        if not 0 <= rank < num_workers:
            raise ValueError(f"rank {rank} is not one of {num_workers} workers")
        self._sampler, self._num_workers, self._rank = sampler, num_workers, rank

    def __len__(self) -> int:
        return len(range(self._rank, len(self._sampler), self._num_workers))

    def __iter__(self) -> Iterator:
        for i, item in enumerate(self._sampler):
            if i % self._num_workers == self._rank:
                yield item


class SkipSampler(torch.utils.data.Sampler):
    """Its sampler without the first `skip` items."""

    def __init__(self, sampler: torch.utils.data.Sampler, skip: int) -> None:
        self._sampler, self._skip = sampler, skip

    def __len__(self) -> int:
        return max(0, len(self._sampler) - self._skip)

    def __iter__(self) -> Iterator:
        iterator = iter(self._sampler)
        for _ in range(self._skip):
            next(iterator, None)
        yield from iterator


# The same operations on a batch sampler's batches.
RepeatBatchSampler = RepeatSampler
DistributedBatchSampler = DistributedSampler
SkipBatchSampler = SkipSampler

__all__: List[str] = [
    "DistributedBatchSampler", "DistributedSampler", "RepeatBatchSampler", "RepeatSampler",
    "ReproducibleShuffleSampler", "SkipBatchSampler", "SkipSampler",
]

"""Fashion-MNIST from its IDX files (Debian's dataset-fashion-mnist installs them), as tensors:
no download, no torchvision."""

import gzip
import os
import struct

import torch
import torch.utils.data

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def _read_idx(name: str, limit: int) -> torch.Tensor:
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: install Debian's dataset-fashion-mnist, or set FASHION_MNIST_DIR")
    with gzip.open(path) as f:
        magic, count = struct.unpack(">II", f.read(8))
        item_shape = [struct.unpack(">I", f.read(4))[0] for _ in range((magic & 0xFF) - 1)]
        count = min(count, limit)
        item_bytes = 1
        for size in item_shape:
            item_bytes *= size
        # Only the items asked for are decompressed.
        return torch.frombuffer(bytearray(f.read(count * item_bytes)), dtype=torch.uint8).reshape([count] + item_shape)


def fashion_mnist(split: str, limit: int) -> torch.utils.data.TensorDataset:
    """The first `limit` images of the "train" or "t10k" split, normalized, with their labels."""
    images = _read_idx(f"{split}-images-idx3-ubyte.gz", limit).float().div(255).sub(0.2860).div(0.3530)
    labels = _read_idx(f"{split}-labels-idx1-ubyte.gz", limit).long()
    return torch.utils.data.TensorDataset(images.unsqueeze(1), labels)

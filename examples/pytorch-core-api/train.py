"""A CNN on Fashion-MNIST in PyTorch, written against Determined's Core API (`determined`) and
trained data-parallel with torch.distributed under det's launcher:

    entrypoint = "/usr/bin/python3 -m determined.launch.torch_distributed /usr/bin/python3 train.py"

One process per slot on every agent of the trial; each trains on its shard of every batch, DDP
averages the gradients, the chief reports and checkpoints; a paused or preempted trial
checkpoints and continues from there. On CPU slots: gloo (Debian's python3-torch and
dataset-fashion-mnist); on GPU slots: the process's GPU (LOCAL_RANK) and NCCL. The
hyperparameter `dataset = "synthetic"` trains on random images where Fashion-MNIST is not installed.
"""

import datetime
import gzip
import os
import struct

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import determined as det
from determined import core

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(name, limit):
    with gzip.open(os.path.join(DATA, name)) as f:
        magic, count = struct.unpack(">II", f.read(8))
        shape = [count] + [struct.unpack(">I", f.read(4))[0] for _ in range((magic & 0xFF) - 1)]
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).reshape(shape)
    return data[:limit]


def split(kind, limit, dataset):
    if dataset == "synthetic":
        generator = torch.Generator().manual_seed(0 if kind == "train" else 1)
        labels = torch.randint(10, (limit,), generator=generator)
        images = torch.rand(limit, 1, 28, 28, generator=generator) * 0.5 + labels.view(-1, 1, 1, 1) / 20
        return images, labels
    images = read_idx(f"{kind}-images-idx3-ubyte.gz", limit).float().div(255).unsqueeze(1)
    labels = read_idx(f"{kind}-labels-idx1-ubyte.gz", limit).long()
    return images, labels


def training_device():
    """The process's GPU on GPU slots (the launcher's LOCAL_RANK among the slots it was given), else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    return torch.device("cpu")


class Net(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.fc = nn.Linear(2 * channels * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main(core_context, hparams, latest_checkpoint):
    rank, size = core_context.distributed.rank, core_context.distributed.size
    torch.manual_seed(hparams.get("seed", 1))
    device = training_device()
    print(f"process {rank} of {size} trains on {device}", flush=True)
    model = Net(int(hparams["channels"])).to(device)
    if size > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=hparams["learning_rate"])
    batch_size = int(hparams["global_batch_size"])
    dataset = hparams.get("dataset", "fashion-mnist")
    train_x, train_y = (t.to(device) for t in split("train", int(hparams.get("train_limit", 60000)), dataset))
    val_x, val_y = (t.to(device) for t in split("t10k", int(hparams.get("validation_limit", 2000)), dataset))

    steps = 0
    if latest_checkpoint:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            state = torch.load(os.path.join(path, "state.pt"), map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        steps = state["steps"]
        print(f"continuing from checkpoint at batch {steps}", flush=True)

    def checkpoint():
        if rank == 0:
            with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "steps": steps},
                           os.path.join(path, "state.pt"))

    for op in core_context.searcher.operations():
        while steps < op.length:
            start = (steps * batch_size) % (len(train_x) - batch_size + 1)
            shard = slice(start + rank * batch_size // size, start + (rank + 1) * batch_size // size)
            loss = F.cross_entropy(model(train_x[shard]), train_y[shard])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if steps % 10 == 0 and rank == 0:
                core_context.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss.item()})
                op.report_progress(steps)
            if core_context.preempt.should_preempt():
                checkpoint()
                return
        with torch.no_grad():
            logits = model(val_x)
            metrics = {"validation_loss": F.cross_entropy(logits, val_y).item(),
                       "validation_accuracy": (logits.argmax(1) == val_y).float().mean().item()}
        checkpoint()
        if rank == 0:
            core_context.train.report_validation_metrics(steps_completed=steps, metrics=metrics)
            op.report_completed(metrics["validation_loss"])


if __name__ == "__main__":
    info = det.get_cluster_info()
    # A peer that died or hangs fails a collective within two minutes (gloo's default is 30),
    # and det restarts the run from its latest checkpoint. NCCL between GPUs, gloo between CPUs.
    if torch.cuda.is_available():
        torch.cuda.set_device(training_device())
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", timeout=datetime.timedelta(minutes=2))
    with core.init(distributed=core.DistributedContext.from_torch_distributed()) as core_context:
        main(core_context, info.trial.hparams, info.latest_checkpoint)

"""A CNN on Fashion-MNIST as a PyTorchTrial, written the way Determined's docs teach it: the same
file runs under det's legacy entrypoint (`entrypoint: model_def:FashionMNISTTrial`) and under
the Trainer API (train.py)."""

from typing import Any, Dict

import torch
import torch.nn as nn
import torch.nn.functional as F

from determined import pytorch

from data import fashion_mnist


class Net(nn.Module):
    def __init__(self, channels: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(2 * channels * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.dropout(x.flatten(1)))


class FashionMNISTTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(Net(context.get_hparam("channels"), context.get_hparam("dropout")))
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("learning_rate"), momentum=0.9))
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=1, gamma=0.9),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH)

    def build_training_data_loader(self) -> pytorch.DataLoader:
        data = fashion_mnist("train", self.context.get_hparams().get("train_limit", 60000))
        return pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        data = fashion_mnist("t10k", self.context.get_hparams().get("validation_limit", 10000))
        return pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: pytorch.TorchData, epoch_idx: int, batch_idx: int) -> Dict[str, Any]:
        images, labels = batch
        loss = F.cross_entropy(self.model(images), labels)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer, clip_grads=lambda params: nn.utils.clip_grad_norm_(params, 1.0))
        return {"loss": loss}

    def evaluate_batch(self, batch: pytorch.TorchData, batch_idx: int) -> Dict[str, Any]:
        images, labels = batch
        output = self.model(images)
        return {"validation_loss": F.cross_entropy(output, labels).item(),
                "accuracy": (output.argmax(1) == labels).float().mean().item()}

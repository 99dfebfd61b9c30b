#!/usr/bin/env python3
"""det's determined.pytorch off the cluster, as a Determined user runs it locally: the Trainer's
loop, gradient aggregation, resuming bit-exactly, reducers, checkpoints and their loading,
and the DataLoader's sharding and skipping. Needs Debian's python3-torch (/usr/bin/python3)."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../python"))

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    torch = None

if torch is not None:
    import determined as det
    from determined import pytorch

    def dataset(n=256, seed=0):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 8, generator=generator)
        y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
        return torch.utils.data.TensorDataset(x, y)

    class Recorder(pytorch.PyTorchCallback):
        def __init__(self):
            self.training, self.validation = [], []

        def on_training_workload_end(self, avg_metrics, batch_metrics):
            self.training.append(dict(avg_metrics))

        def on_validation_end(self, metrics):
            self.validation.append(dict(metrics))

    class SmallTrial(pytorch.PyTorchTrial):
        """An MLP with dropout (so random state matters) and a scheduler stepped each batch."""

        def __init__(self, context):
            self.context = context
            self.model = context.wrap_model(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(context.get_hparam("dropout")),
                                                          nn.Linear(16, 2)))
            self.optimizer = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr")))
            step_mode = pytorch.LRScheduler.StepMode[context.get_hparams().get("step_mode", "STEP_EVERY_BATCH")]
            self.scheduler = context.wrap_lr_scheduler(torch.optim.lr_scheduler.StepLR(self.optimizer, context.get_hparams().get("lr_step", 10), 0.5),
                                                       step_mode)
            self.recorder = Recorder()
            self.max_seen = context.wrap_reducer(max, name="max_label", for_training=False)

        def build_training_data_loader(self):
            return pytorch.DataLoader(dataset(), batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

        def build_validation_data_loader(self):
            return pytorch.DataLoader(dataset(64, seed=1), batch_size=16)

        def train_batch(self, batch, epoch_idx, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.optimizer)
            return loss

        def evaluate_batch(self, batch, batch_idx):
            x, y = batch
            self.max_seen.update(int(y.max()))
            return {"validation_loss": F.cross_entropy(self.model(x), y).item(), "batch_idx": batch_idx}

        def evaluation_reducer(self):
            return {"validation_loss": pytorch.Reducer.AVG, "batch_idx": pytorch.Reducer.MAX}

        def build_callbacks(self):
            return {"recorder": self.recorder}

    class EpochWatchingTrial(SmallTrial):
        """SmallTrial noting, at each batch, where the context says it is in its epoch."""

        def __init__(self, context):
            super().__init__(context)
            self.epoch_starts, self.epoch_ends = [], []

        def train_batch(self, batch, epoch_idx, batch_idx):
            if self.context.is_epoch_start():
                self.epoch_starts.append((epoch_idx, batch_idx))
            if self.context.is_epoch_end():
                self.epoch_ends.append((epoch_idx, batch_idx))
            return super().train_batch(batch, epoch_idx, batch_idx)


class DeterminedPytorchTest(unittest.TestCase):
    def setUp(self):
        # The test command installs python3-torch (scripts/install-deps.sh --with-tests): without it
        # every test here fails rather than passing untried.
        self.assertIsNotNone(torch, "needs Debian's python3-torch (scripts/install-deps.sh --with-tests)")
        self.home = tempfile.TemporaryDirectory()
        self.storage = os.path.join(self.home.name, "checkpoints")
        os.environ["XDG_DATA_HOME"] = self.storage  # the off-cluster checkpoint directory's parent
        os.environ.pop("DET_MASTER", None)

    def tearDown(self):
        self.home.cleanup()

    def fit(self, hparams, aggregation_frequency=1, trial_class=None, **fit_args):
        torch.manual_seed(7)
        with pytorch.init(hparams=hparams, aggregation_frequency=aggregation_frequency,
                          exp_conf={"searcher": {"metric": "validation_loss"}}) as context:
            trial = (trial_class or SmallTrial)(context)
            pytorch.Trainer(trial, context).fit(**fit_args)
            return trial, context

    def checkpoints(self):
        root = os.path.join(self.storage, "determined")
        return sorted((os.path.join(root, d) for d in os.listdir(root)), key=os.path.getmtime)

    def test_a_resumed_run_trains_exactly_as_one_without_the_stop(self):
        hparams = {"global_batch_size": 16, "lr": 0.1, "dropout": 0.3}
        whole, _ = self.fit(hparams, max_length=pytorch.Batch(50), reporting_period=pytorch.Batch(1),
                            validation_period=pytorch.Batch(20))
        first, _ = self.fit(hparams, max_length=pytorch.Batch(23), reporting_period=pytorch.Batch(1),
                            validation_period=pytorch.Batch(20))
        stopped_at = os.path.basename(self.checkpoints()[-1])
        second, _ = self.fit(hparams, max_length=pytorch.Batch(50), reporting_period=pytorch.Batch(1),
                             validation_period=pytorch.Batch(20), latest_checkpoint=stopped_at)
        # 256 records in batches of 16: epochs end at 16 and 32; the stop at 23 is mid-epoch.
        resumed = first.recorder.training + second.recorder.training
        self.assertEqual(len(resumed), 50)
        self.assertEqual([m["loss"] for m in resumed], [m["loss"] for m in whole.recorder.training])
        self.assertEqual(second.recorder.validation[-1]["validation_loss"], whole.recorder.validation[-1]["validation_loss"])
        for a, b in zip(whole.model.parameters(), second.model.parameters()):
            self.assertTrue(torch.equal(a, b))

    def test_gradient_aggregation_equals_a_larger_batch(self):
        # The scheduler steps once per batch, as Determined counts them under aggregation: its
        # step size is in batches too, so that both halve the rate after the 10th optimizer step.
        big, _ = self.fit({"global_batch_size": 64, "lr": 0.2, "dropout": 0.0, "lr_step": 10},
                          max_length=pytorch.Batch(12))
        aggregated, _ = self.fit({"global_batch_size": 16, "lr": 0.2, "dropout": 0.0, "lr_step": 40},
                                 aggregation_frequency=4, max_length=pytorch.Batch(48))
        for a, b in zip(big.model.parameters(), aggregated.model.parameters()):
            self.assertLess(float((a - b).abs().max()), 1e-5)
        self.assertAlmostEqual(aggregated.optimizer.param_groups[0]["lr"], 0.1)
        self.assertAlmostEqual(big.optimizer.param_groups[0]["lr"], 0.1)

    def test_each_step_mode_steps_the_scheduler_when_determined_does(self):
        # 256 records in batches of 16: 16 batches an epoch; 48 batches, an optimizer step every 2.
        expected = {"STEP_EVERY_BATCH": 48, "STEP_EVERY_OPTIMIZER_STEP": 24, "STEP_EVERY_EPOCH": 3, "MANUAL_STEP": 0}
        for mode, steps in expected.items():
            with self.subTest(mode=mode):
                trial, context = self.fit({"global_batch_size": 16, "lr": 0.1, "dropout": 0.0, "step_mode": mode},
                                          aggregation_frequency=2, trial_class=EpochWatchingTrial,
                                          max_length=pytorch.Batch(48))
                self.assertEqual(trial.scheduler.last_epoch, steps)
                self.assertEqual(trial.epoch_starts, [(0, 0), (1, 16), (2, 32)])
                self.assertEqual(trial.epoch_ends, [(0, 15), (1, 31), (2, 47)])
                self.assertEqual((context.get_global_batch_size(), context.get_per_slot_batch_size()), (16, 16))

    def test_validation_reduces_with_the_trials_reducers_and_checkpoints_load_back(self):
        trial, _ = self.fit({"global_batch_size": 32, "lr": 0.1, "dropout": 0.0}, max_length=pytorch.Epoch(1),
                            validation_period=pytorch.Epoch(1))
        metrics = trial.recorder.validation[-1]
        self.assertEqual(metrics["batch_idx"], 3)  # MAX over the 4 batches' indices
        self.assertEqual(metrics["max_label"], 1)
        self.assertEqual(len(trial.recorder.validation), 1)  # due at the epoch's end and final: once
        path = self.checkpoints()[-1]
        for name in ("state_dict.pth", "trial_state.pkl", "load_data.json", "metadata.json", "code/determined_pytorch_test.py"):
            self.assertTrue(os.path.exists(os.path.join(path, name)), name)
        loaded = pytorch.load_trial_from_checkpoint_path(path, trial_class=SmallTrial)
        for a, b in zip(trial.model.parameters(), loaded.model.parameters()):
            self.assertTrue(torch.equal(a, b))

    def test_automatic_mixed_precision_runs_the_forward_in_autocast(self):
        class Amp(SmallTrial):
            def __init__(self, context):
                context.experimental.use_amp()
                super().__init__(context)
                self.dtypes = set()

            def train_batch(self, batch, epoch_idx, batch_idx):
                x, y = batch
                output = self.model(x)
                self.dtypes.add(output.dtype)
                loss = F.cross_entropy(output.float(), y)
                self.context.backward(loss)
                self.context.step_optimizer(self.optimizer, clip_grads=lambda ps: nn.utils.clip_grad_norm_(ps, 1.0))
                return loss

        with pytorch.init(hparams={"global_batch_size": 16, "lr": 0.1, "dropout": 0.0}) as context:
            trial = Amp(context)
            before = [p.clone() for p in trial.model.parameters()]
            pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(4))
        # On a CPU autocast computes in bfloat16 (a GPU: float16, with the GradScaler scaling).
        self.assertEqual(trial.dtypes, {torch.bfloat16 if context.device.type == "cpu" else torch.float16})
        self.assertTrue(any(not torch.equal(a, b) for a, b in zip(before, trial.model.parameters())))

    def test_a_trial_with_both_or_neither_evaluation_hook_is_refused(self):
        class Both(SmallTrial):
            def evaluate_full_dataset(self, data_loader):
                return {}

        with pytorch.init(hparams={"global_batch_size": 16, "lr": 0.1, "dropout": 0.0}) as context:
            with self.assertRaisesRegex(det.InvalidExperimentException, "exactly one of"):
                pytorch.Trainer(Both(context), context).fit(max_length=pytorch.Batch(1))

    def test_the_data_loader_shards_and_skips_without_iterating(self):
        loader = pytorch.DataLoader(dataset(100), batch_size=10, shuffle=True)
        stream = iter(loader.get_data_loader(repeat=True, seed=3).batch_sampler)
        first_25 = [next(stream) for _ in range(25)]
        skipped = iter(loader.get_data_loader(repeat=True, skip=17, seed=3).batch_sampler)
        self.assertEqual([next(skipped) for _ in range(8)], first_25[17:])
        self.assertNotEqual(first_25[:10], first_25[10:20])  # each epoch shuffles anew
        ranks = [list(loader.get_data_loader(num_replicas=3, rank=r, seed=3).batch_sampler) for r in range(3)]
        self.assertEqual(sorted(i for shard in ranks for b in shard for i in b), list(range(100)))
        with self.assertRaisesRegex(ValueError, "IterableDataset"):
            pytorch.DataLoader(torch.utils.data.IterableDataset())

    def test_a_plain_torch_loader_needs_the_reproducibility_check_off(self):
        class PlainLoader(SmallTrial):
            def build_training_data_loader(self):
                return torch.utils.data.DataLoader(dataset(), batch_size=16)

        with pytorch.init(hparams={"global_batch_size": 16, "lr": 0.1, "dropout": 0.0}) as context:
            with self.assertRaisesRegex(RuntimeError, "disable_dataset_reproducibility_checks"):
                pytorch.Trainer(PlainLoader(context), context).fit(max_length=pytorch.Batch(2))
        with pytorch.init(hparams={"global_batch_size": 16, "lr": 0.1, "dropout": 0.0}) as context:
            context.experimental.disable_dataset_reproducibility_checks()
            trial = PlainLoader(context)
            pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(40), reporting_period=pytorch.Batch(8))
            self.assertEqual(len(trial.recorder.training), 5)  # 40 batches over 3 epochs of 16


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""TensorBoard event files on a real cluster: every trial of a search writes them under the
checkpoint storage (a Core API trial's the master writes), and TensorBoard's own protos (tests/data/tensorboard_protos, compiled here
with protoc and read with Debian's python3-protobuf) decode them to the hyperparameters and the
metrics the master stored, each record's framing CRCs checked by a CRC written here.
Runs under Debian's /usr/bin/python3, which sees python3-protobuf."""

import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

PROTOS = os.path.join(os.path.dirname(__file__), "../data/tensorboard_protos")
EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/core-api")


def compile_protos():
    out = tempfile.mkdtemp(prefix="det-tb-protos-")
    files = [os.path.relpath(p, PROTOS) for p in glob.glob(f"{PROTOS}/tensorboard/**/*.proto", recursive=True)]
    subprocess.run(["protoc", f"-I{PROTOS}", "-I/usr/include", f"--python_out={out}", *files], check=True)
    sys.path.insert(0, out)
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    return event_pb2, plugin_data_pb2


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """Each record's data, after checking both of its CRCs."""
    with open(path, "rb") as f:
        data = f.read()
    at, out = 0, []
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked(crc32c(data[at:at + 8])), f"{path}: bad length CRC at byte {at}"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert body_crc == masked(crc32c(body)), f"{path}: bad data CRC at byte {at}"
        out.append(body)
        at += 12 + length + 4
    return out


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


CONFIG = """
name = "tfevents"
entrypoint = "builtin:simulate"
min_validation_period = { batches = 40 }
min_checkpoint_period = { batches = 40 }
scheduling_unit = 20
[hyperparameters]
x = { type = "double", minval = 0.0, maxval = 1.0 }
optimizer = { type = "categorical", vals = ["adam", "sgd"] }
[hyperparameters.model]
layers = { type = "int", minval = 1, maxval = 4 }
[searcher]
name = "random"
metric = "validation_loss"
max_trials = 2
max_length = { batches = 120 }
[data]
seconds_per_batch = 0.002
[reproducibility]
experiment_seed = 5
"""


class TensorBoardEventFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.event_pb2, cls.plugin_data_pb2 = compile_protos()
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def decoded(self, directory):
        """(file, its events after the version) for each file in the trial's directory; checks
        that each file starts with its version."""
        files = sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))
        self.assertTrue(files, f"no event files in {directory}")
        events = []
        for path in files:
            parts = os.path.basename(path).split(".")  # events.out.tfevents.SECONDS.HOST.PID.N
            self.assertEqual(len(parts[3]), 10, f"{path}: the seconds are 10 digits")
            file_events = []
            for body in records(path):
                e = self.event_pb2.Event()
                e.ParseFromString(body)
                file_events.append(e)
            self.assertEqual(file_events[0].file_version, "brain.Event:2", path)
            events.append((path, file_events[1:]))
        return events

    def check_trial(self, exp, t):
        """The trial's event files hold its hyperparameters and exactly the metrics stored for it;
        returns the hyperparameters."""
        c = self.cluster
        directory = os.path.join(c.data_dir, "checkpoints", "tensorboard", "experiment", str(exp), "trial", str(t))
        hparams, scalars = {}, {}
        for path, events in self.decoded(directory):
            seen_in_file = set()
            for e in events:
                for v in e.summary.value:
                    if v.tag == "_hparams_/session_start_info":
                        self.assertEqual(v.metadata.plugin_data.plugin_name, "hparams")
                        data = self.plugin_data_pb2.HParamsPluginData()
                        data.ParseFromString(v.metadata.plugin_data.content)
                        self.assertEqual(data.WhichOneof("data"), "session_start_info")
                        for name, value in data.session_start_info.hparams.items():
                            hparams[name] = getattr(value, value.WhichOneof("kind"))
                        continue
                    # A tag's first event in each file carries the scalars plugin's metadata.
                    has_metadata = v.metadata.plugin_data.plugin_name == "scalars"
                    self.assertEqual(has_metadata, v.tag not in seen_in_file, f"{path}: {v.tag} at {e.step}")
                    seen_in_file.add(v.tag)
                    self.assertEqual(v.tensor.dtype, 1)  # DT_FLOAT
                    self.assertEqual(len(v.tensor.tensor_shape.dim), 0)  # rank 0
                    self.assertEqual(len(v.tensor.float_val), 1)
                    scalars[(v.tag, e.step)] = v.tensor.float_val[0]
        expected = {}
        for group in ("training", "validation"):
            for report in c.get(f"/api/v1/trials/{t}/metrics?group={group}")["metrics"]:
                for name, value in report["metrics"].items():
                    if name in ("batches", "epochs"):  # the master's bookkeeping, not the trial's
                        continue
                    expected[(f"{group}/{name}", int(report["total_batches"]))] = as_float32(value)
        self.assertTrue(any(tag.startswith("validation/") for tag, _ in expected), expected)
        self.assertEqual(scalars, expected, f"trial {t}")
        return hparams

    def test_every_trial_writes_its_hyperparameters_and_stored_metrics(self):
        c = self.cluster
        exp = c.submit(CONFIG)
        done = c.wait_experiment(exp, {"STATE_COMPLETED"}, timeout=300)
        trials = done["trials"]
        self.assertEqual(len(trials), 2)
        for trial in trials:
            hparams = self.check_trial(exp, trial["id"])
            stored = c.get(f"/api/v1/trials/{trial['id']}")["trial"]
            self.assertEqual(hparams["x"], trial_hparam(stored, "x"))
            self.assertEqual(hparams["optimizer"], trial_hparam(stored, "optimizer"))
            self.assertEqual(hparams["model.layers"], trial_hparam(stored, "model", "layers"))

    def test_core_api_trials_get_event_files_from_the_master(self):
        c = self.cluster
        with open(os.path.join(EXAMPLE, "adaptive.toml")) as f:
            config = f.read().replace('name = "adaptive_asha"', 'name = "random"').replace("max_trials = 6", "max_trials = 2")
        path = os.path.join(c.root, "core.toml")
        with open(path, "w") as f:
            f.write(config)
        out = c.det("submit", path, EXAMPLE)
        self.assertEqual(out.returncode, 0, out.stderr)
        exp = int(out.stdout.split()[-1])
        done = c.wait_experiment(exp, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=300)
        self.assertEqual(done["experiment"]["state"], "STATE_COMPLETED")
        for trial in done["trials"]:
            hparams = self.check_trial(exp, trial["id"])
            self.assertEqual(hparams["learning_rate"], trial_hparam(trial, "learning_rate"))


def trial_hparam(trial, *path):
    """A hyperparameter as the REST trial stores it (a JSON text), numbers as doubles."""
    value = json.loads(trial["hparams"])
    for key in path:
        value = value[key]
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


if __name__ == "__main__":
    unittest.main()

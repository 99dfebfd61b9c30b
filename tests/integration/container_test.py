#!/usr/bin/env python3
"""Custom environments: a Core API trial runs in an OCI image through podman, with its variables
and a read-only bind mount, reporting metrics and checkpoints through det's bind-mounted client;
memory limits end a run with a sentence, in an image or not; an image that cannot be had fails the
trial at once; a command runs in its image; a pull that hangs holds up no other work on its agent,
and a kill ends it at once."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402
from container_image import IMAGE_ONLY_PYTHON, ensure_python_image, podman_command, podman_env  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(__file__), "../data/programs/container_trial")
DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def experiment(entrypoint, environment="", resources="", max_restarts=0, mounts=""):
    return f"""
name = "container"
entrypoint = "{entrypoint}"
max_restarts = {max_restarts}
{mounts}
[environment]
{environment}
[resources]
{resources}
[hyperparameters]
x = 1
[searcher]
name = "single"
metric = "validation_loss"
max_length = {{ batches = 5 }}
"""


def containers_named(prefix):
    out = subprocess.run(podman_command() + ["ps", "--all", "--format", "{{.Names}}"], env=podman_env(),
                         capture_output=True, text=True).stdout
    return [n for n in out.split() if n.startswith(prefix)]


class ContainerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.image = ensure_python_image()
        cls.data = tempfile.mkdtemp(prefix="det-container-data-")
        os.chmod(cls.data, 0o755)  # the trial runs as its owner's Unix user, not as root
        with open(os.path.join(cls.data, "value.txt"), "w") as f:
            f.write("42")
        # The trial bind-mounts cls.data, which the master allows only where its admin says so.
        cls.cluster = Cluster(agents=1, slots="cpu:2",
                              master_config=f'[security]\nallowed_host_paths = ["{cls.data}"]\n').start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        shutil.rmtree(cls.data, ignore_errors=True)

    def run_trial(self, config):
        c = self.cluster
        exp_id = c.submit_directory(config, PROGRAM, f"exp-{time.monotonic_ns()}.toml")
        exp = c.wait_experiment(exp_id, DONE, timeout=240)
        (trial,) = exp["trials"]
        return exp, trial

    def test_a_core_api_trial_runs_in_its_image(self):
        mounts = f"""[[bind_mounts]]
host_path = "{self.data}"
container_path = "/mnt/data"
read_only = true
"""
        exp, trial = self.run_trial(experiment(
            f"{IMAGE_ONLY_PYTHON} train.py", mounts=mounts,
            environment=f'image = "{self.image}"\nenvironment_variables = ["GREETING=hello"]'))
        c = self.cluster
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial["id"]))
        training = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=training")["metrics"]
        self.assertEqual(len(training), 5)
        facts = training[-1]["metrics"]
        self.assertEqual(facts["in_image"], 1.0)  # the host has no det-image-python3 at all
        self.assertEqual(facts["greeting_ok"], 1.0)
        self.assertEqual(facts["mount_value"], 42.0)
        self.assertEqual(facts["mount_read_only"], 1.0)
        self.assertTrue(trial["latest_checkpoint_uuid"])
        checkpoint = c.get(f"/api/v1/checkpoints/{trial['latest_checkpoint_uuid']}")["checkpoint"]
        self.assertEqual(checkpoint["state"], "CHECKPOINT_STATE_COMPLETED")
        self.assertEqual(containers_named(f"det-{trial['id']}."), [])  # removed once it ended

    def test_a_trial_past_its_memory_limit_ends_with_a_sentence(self):
        for where, entrypoint, environment in [
            ("in its image", f"{IMAGE_ONLY_PYTHON} train.py", f'image = "{self.image}"\nenvironment_variables = ["ALLOCATE_MB=600"]'),
            ("on the host", "python3 train.py", 'environment_variables = ["ALLOCATE_MB=600"]'),
        ]:
            with self.subTest(where):
                exp, trial = self.run_trial(experiment(entrypoint, environment=environment,
                                                       resources='memory_limit = "256MiB"'))
                self.assertEqual(trial["state"], "STATE_ERROR", self.cluster.trial_logs(trial["id"]))
                self.assertIn("the trial exceeded its memory limit of 256 MiB", trial["exit_reason"],
                              self.cluster.trial_logs(trial["id"]))

    def test_an_image_that_cannot_be_had_fails_the_trial_at_once(self):
        started = time.monotonic()
        exp, trial = self.run_trial(experiment("python3 train.py", max_restarts=3,
                                               environment='image = "localhost/det-no-such-image:1"'))
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertIn("localhost/det-no-such-image:1", trial["exit_reason"])
        self.assertEqual(int(trial.get("restarts", 0)), 0)  # not retried: it would fail the same way
        self.assertLess(time.monotonic() - started, 60)

    def test_a_command_runs_in_its_image(self):
        c = self.cluster
        config = os.path.join(c.root, "cmd.toml")
        with open(config, "w") as f:
            f.write(f"""[environment]
image = "{self.image}"
environment_variables = ["GREETING=hello"]
""")
        out = c.det("cmd", "run", "--config-file", config, "--", IMAGE_ONLY_PYTHON, "-c",
                    "import os; print('greeting', os.environ['GREETING'])")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("greeting hello", out.stdout)

    def test_a_pull_that_hangs_holds_up_nothing_and_a_kill_ends_it_at_once(self):
        c = self.cluster
        # A registry that takes connections and never answers: podman's pull of it lasts over a minute.
        registry = socket.socket()
        registry.bind(("127.0.0.1", 0))
        registry.listen(16)
        try:
            config = os.path.join(c.root, "hanging-image.toml")
            with open(config, "w") as f:
                f.write(f'[environment]\nimage = "127.0.0.1:{registry.getsockname()[1]}/det-hangs:1"\n')
            out = c.det("cmd", "run", "-d", "--config-file", config, "--", "true")
            self.assertEqual(out.returncode, 0, out.stderr)
            pulling = out.stdout.strip().splitlines()[-1]
            registry.settimeout(30)
            held, _ = registry.accept()  # podman is pulling; the connection stays open and silent
            # The agent's other work goes on meanwhile: a command on its other slot starts and ends.
            started = time.monotonic()
            other = c.det("cmd", "run", "--", "sh", "-c", "echo beside the pull")
            self.assertEqual(other.returncode, 0, other.stderr)
            self.assertIn("beside the pull", other.stdout)
            self.assertLess(time.monotonic() - started, 30)
            self.assertEqual(c.get(f"/api/v1/commands/{pulling}")["command"]["state"], "TASK_STATE_STARTING")
            started = time.monotonic()
            self.assertEqual(c.det("cmd", "kill", pulling).returncode, 0)
            command = wait_for(lambda: (lambda t: t if t["state"] == "TASK_STATE_TERMINATED" else None)(
                c.get(f"/api/v1/commands/{pulling}")["command"]), 30, "the pulling command to end")
            self.assertLess(time.monotonic() - started, 10)  # not when the pull gives up
            self.assertIn("killed on request", command["exit_reason"])
            held.close()
        finally:
            registry.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)

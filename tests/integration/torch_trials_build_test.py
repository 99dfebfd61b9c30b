#!/usr/bin/env python3
"""The torch trials built on a node against its own LibTorch, as on a GPU node: scripts/package.sh
makes the release archive from this build, its scripts/build-torch-trials.sh builds them from the
sources it carries (DET_COMPONENTS=torch-trials) against Debian's LibTorch into its lib/det, the
archive's det-worker loads them, and a cluster of the archive's binaries trains builtin:mlp with
them. Without them, det-worker --check-torch-trials says so."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, synthetic_config  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))


class TorchTrialsBuildTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="det-torch-trials-", dir="/tmp")
        os.chmod(cls.work, 0o755)  # the cluster's PostgreSQL runs as postgres and reads the archive
        build = os.path.abspath(os.path.join(BIN, ".."))
        out = subprocess.run([os.path.join(ROOT, "scripts/package.sh"), build, cls.work],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise AssertionError(f"scripts/package.sh failed:\n{out.stderr}")
        archive = out.stdout.strip().splitlines()[-1]
        subprocess.run(["tar", "-xzf", archive, "-C", cls.work], check=True)
        cls.home = next(os.path.join(cls.work, d) for d in os.listdir(cls.work)
                        if d.startswith("det-") and os.path.isdir(os.path.join(cls.work, d)))
        # ccache keys on paths below this base: later runs of this test compile nothing again.
        env = dict(os.environ, CCACHE_BASEDIR=cls.home, CCACHE_NOHASHDIR="1")
        built = subprocess.run([os.path.join(cls.home, "scripts/build-torch-trials.sh")],
                               capture_output=True, text=True, timeout=1200, env=env)
        if built.returncode != 0:
            raise AssertionError(f"build-torch-trials.sh failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")
        cls.lib = os.path.join(cls.home, "lib", "det")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def check(self):
        return subprocess.run([os.path.join(self.home, "bin", "det-worker"), "--check-torch-trials"],
                              capture_output=True, text=True, timeout=120)

    def test_1_they_are_installed_beside_the_archives_worker_which_loads_them(self):
        self.assertTrue(os.path.exists(os.path.join(self.lib, "libdet_torch_trials.so")))
        self.assertTrue(os.path.exists(os.path.join(self.lib, "det-trial-bench")))
        out = self.check()
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_2_det_trial_bench_trains_without_reading_the_loss_at_every_batch(self):
        out = subprocess.run([os.path.join(self.lib, "det-trial-bench"), "--trial", "mlp", "--batches", "60",
                              "--report-every", "20", "--hparams", '{"global_batch_size":32,"hidden_sizes":[32]}',
                              "--data", '{"dataset":"synthetic","synthetic_train_size":1024}'],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        result = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(result["batches"], 60)
        self.assertEqual(result["reports"], 3)
        self.assertEqual(result["batches_with_metrics"], 0)
        self.assertEqual(result["metric_reads_per_report"], 1.0)
        self.assertGreater(result["samples_per_second"], 0)

    def test_3_a_cluster_of_the_archives_binaries_trains_builtin_mlp_with_them(self):
        c = Cluster(agents=1, slots="cpu:1", bin_dir=os.path.join(self.home, "bin"))
        try:
            c.start()
            exp = c.submit(synthetic_config(name="archive-mlp", batches=100))
            final = c.wait_experiment(exp, ("STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"), timeout=300)
            trial = final["trials"][0]
            self.assertEqual(final["experiment"]["state"], "STATE_COMPLETED", "\n".join(c.trial_logs(trial["id"]))[-3000:])
            validation = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]
            self.assertGreater(validation[-1]["metrics"]["validation_accuracy"], 0.5)
        finally:
            c.stop()

    def test_4_without_them_the_worker_says_what_is_missing_and_what_to_run(self):
        moved = os.path.join(self.work, "libdet_torch_trials.so")
        os.rename(os.path.join(self.lib, "libdet_torch_trials.so"), moved)
        try:
            out = self.check()
        finally:
            os.rename(moved, os.path.join(self.lib, "libdet_torch_trials.so"))
        self.assertEqual(out.returncode, 1)
        self.assertIn("libdet_torch_trials.so could not be loaded", out.stdout)
        self.assertIn("scripts/build-torch-trials.sh", out.stdout)


if __name__ == "__main__":
    unittest.main()

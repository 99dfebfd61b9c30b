#!/usr/bin/env python3
"""Container overhead: the same Core API trial (bench/core_api_reporter) run as a process on the
agent and in an OCI image through podman, on one cluster, alternating:

  start        submit -> its first training report stored, p50 over --runs runs each way
  throughput   training reports per second one process makes through det_core, p50 of the runs

Both run Debian's /usr/bin/python3 (the image is Debian's too: tests/integration/container_image.py
builds it), so the interpreter is the same and only the container differs.

Usage: bench/container_bench.py [--runs 5] [--reports 2000]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, wait_for  # noqa: E402
from container_image import ensure_python_image  # noqa: E402

CONFIG = """
name = "container-bench"
entrypoint = "/usr/bin/python3 report.py"
max_restarts = 0
[environment]
{environment}
[searcher]
name = "single"
metric = "validation_loss"
max_length = {{ batches = 1 }}
[hyperparameters]
reports = {reports}
"""


def run(c, model_dir, environment, reports):
    """(seconds from submit to the first report, reports per second)."""
    submitted = time.time()
    exp_id = c.submit_directory(CONFIG.format(environment=environment, reports=reports), model_dir,
                                f"bench-{time.monotonic_ns()}.toml")
    trial = c.first_trial(exp_id)
    first = wait_for(lambda: c.first_report_time(trial), 120, "the first report", interval=0.01)
    exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=600, interval=0.2)
    logs = c.trial_logs(trial)
    assert exp["experiment"]["state"] == "STATE_COMPLETED", logs[-20:]
    line = next(l for l in logs if l.startswith("core_api_bench "))
    return first - submitted, json.loads(line.split(" ", 1)[1])["reports_per_second"]


def p50(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reports", type=int, default=2000)
    opts = parser.parse_args()
    image = ensure_python_image()
    model_dir = tempfile.mkdtemp(prefix="det-container-bench-")
    shutil.copy(os.path.join(HERE, "core_api_reporter/report.py"), model_dir)
    shutil.copy(os.path.join(HERE, "../examples/core-api/det_core.py"), model_dir)
    c = Cluster(agents=1, slots="cpu:1").start()
    try:
        ways = {"host": "", "image": f'image = "{image}"'}
        run(c, model_dir, ways["host"], 10)  # warm: the first experiment's rows, the page cache
        run(c, model_dir, ways["image"], 10)
        results = {way: [] for way in ways}
        for _ in range(opts.runs):
            for way, environment in ways.items():
                results[way].append(run(c, model_dir, environment, opts.reports))
    finally:
        c.stop()
        shutil.rmtree(model_dir, ignore_errors=True)
    start = {way: p50([s for s, _ in rs]) for way, rs in results.items()}
    rate = {way: p50([r for _, r in rs]) for way, rs in results.items()}
    print(f"Core API trial, {opts.runs} runs each way, p50: start {start['image'] * 1e3:.0f} ms in the image vs "
          f"{start['host'] * 1e3:.0f} ms as a process (ratio {start['image'] / start['host']:.2f}); "
          f"{rate['image']:.0f} vs {rate['host']:.0f} reports/s (ratio {rate['image'] / rate['host']:.2f})")


if __name__ == "__main__":
    main()

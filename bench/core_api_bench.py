#!/usr/bin/env python3
"""Core API metric reporting: how many training-metric reports one process can make per second
through det_core.py (POST /api/v1/trials/{id}/metrics, each answered once the master has taken
it), and the latency of one, against the same process's plain GETs of /api/v1/master, a REST
round trip to the same server that does no work. Checks that every report was stored.

Usage: bench/core_api_bench.py [--reports 2000]   (DET_BIN_DIR defaults to build/bin.)
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster  # noqa: E402

CONFIG = """
name = "core-api-bench"
entrypoint = "python3 report.py"
max_restarts = 0
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 1 }
[hyperparameters]
reports = %d
"""


def measure(c, reports):
    """Runs the reporter trial on cluster `c`; its figures, checked against what was stored."""
    model_dir = tempfile.mkdtemp(prefix="det-core-bench-")
    try:
        shutil.copy(os.path.join(HERE, "core_api_reporter/report.py"), model_dir)
        shutil.copy(os.path.join(HERE, "../examples/core-api/det_core.py"), model_dir)
        config = os.path.join(c.root, "bench.toml")
        with open(config, "w") as f:
            f.write(CONFIG % reports)
        out = c.det("submit", config, model_dir)
        assert out.returncode == 0, out.stderr
        exp_id = int(out.stdout.split()[-1])
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=600, interval=1)
        trial = exp["trials"][0]["id"]
        logs = c.trial_logs(trial)
        assert exp["experiment"]["state"] == "STATE_COMPLETED", logs[-20:]
        line = next(l for l in logs if l.startswith("core_api_bench "))
        m = json.loads(line.split(" ", 1)[1])
        stored = len(c.get(f"/api/v1/trials/{trial}/metrics?group=training")["metrics"])
        assert stored == reports, f"only {stored} of {reports} reports were stored"
        return m
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reports", type=int, default=2000)
    args = ap.parse_args()
    c = Cluster(agents=1).start()
    try:
        m = measure(c, args.reports)
        print(f"reports_per_second={m['reports_per_second']:.0f} report_p50_ms={m['report_p50_ms']:.2f} "
              f"baseline_get_per_second={m['baseline_per_second']:.0f} baseline_p50_ms={m['baseline_p50_ms']:.2f} "
              f"ratio={m['reports_per_second'] / m['baseline_per_second']:.2f} stored={args.reports}/{args.reports}")
    finally:
        c.stop()


if __name__ == "__main__":
    main()

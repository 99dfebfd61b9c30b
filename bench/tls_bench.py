#!/usr/bin/env python3
"""TLS's cost: the same figures on a cluster serving TLS (HTTPS, TLS actor links, certificates
made here) and on a plain-text one, both running in this script, measured in alternating rounds.

  trial start        submit -> first training metric of a 20-batch builtin:mlp (cluster_bench's
                     measure), median over the rounds
  metric reports     training reports per second of a builtin:simulate trial that reports after
                     every batch and trains in no time: worker -> master over the actor link,
                     each report acknowledged once taken
  Core API reports   reports per second of one Python process through det_core.py
                     (core_api_bench's reporter): POSTs over HTTP(S)

Each ratio is plain's time / TLS's time, or TLS's rate / plain's rate: 1.0 means TLS costs
nothing, below 1.0 it costs that fraction.

Usage: bench/tls_bench.py [--rounds 7] [--reports 100000] [--core-api-reports 3000]   (DET_BIN_DIR defaults to build/bin.)
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
sys.path.insert(0, HERE)
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, parse_time, simulated_config  # noqa: E402
from cluster_bench import trial_start_seconds  # noqa: E402
import core_api_bench  # noqa: E402


def metric_reports_per_second(c, reports):
    exp_id = c.submit(simulated_config("reports", reports, seconds_per_batch=0, checkpoint_period=reports,
                                       validation_period=reports, scheduling_unit=1))
    exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=600, interval=0.5)
    assert exp["experiment"]["state"] == "STATE_COMPLETED", exp
    rows = c.get(f"/api/v1/trials/{exp['trials'][0]['id']}/metrics?group=training&limit={reports}")["metrics"]
    assert len(rows) == reports, f"only {len(rows)} of {reports} reports were stored"
    return (len(rows) - 1) / (parse_time(rows[-1]["time"]) - parse_time(rows[0]["time"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reports", type=int, default=100000)
    ap.add_argument("--core-api-reports", type=int, default=3000)
    args = ap.parse_args()
    clusters = {"plain": Cluster(agents=1), "tls": Cluster(agents=1, tls=True)}
    figures = {kind: {"start": [], "reports": [], "core_api": []} for kind in clusters}
    try:
        for c in clusters.values():
            c.start()
            trial_start_seconds(c)  # warms the cluster: pool, agent, page cache
        for round_ in range(args.rounds):
            for kind, c in clusters.items():
                f = figures[kind]
                f["start"].append(trial_start_seconds(c))
                f["reports"].append(metric_reports_per_second(c, args.reports))
                f["core_api"].append(core_api_bench.measure(c, args.core_api_reports)["reports_per_second"])
                print(f"round {round_ + 1} {kind}: start_ms={f['start'][-1] * 1000:.0f} "
                      f"metric_reports_per_s={f['reports'][-1]:.0f} core_api_reports_per_s={f['core_api'][-1]:.0f}",
                      flush=True)
    finally:
        for c in clusters.values():
            c.stop()
    med = {kind: {k: statistics.median(v) for k, v in f.items()} for kind, f in figures.items()}
    plain, tls = med["plain"], med["tls"]
    print(f"trial_start_p50_ms plain={plain['start'] * 1000:.0f} tls={tls['start'] * 1000:.0f} "
          f"ratio={plain['start'] / tls['start']:.2f}")
    print(f"metric_reports_per_s plain={plain['reports']:.0f} tls={tls['reports']:.0f} "
          f"ratio={tls['reports'] / plain['reports']:.2f}")
    print(f"core_api_reports_per_s plain={plain['core_api']:.0f} tls={tls['core_api']:.0f} "
          f"ratio={tls['core_api'] / plain['core_api']:.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The REST API under many connections: `wrk` with 200 connections for 10 s on
GET /api/v1/experiments (default page, 1,000 experiments stored), GET /api/v1/experiments/N,
GET /api/v1/trials/N/metrics (a finished trial's 200 training and 4 validation reports) and
GET /api/v1/agents. One agent runs that trial and is then stopped, so nothing runs while wrk does
and the stored experiments stay queued.
Reported for each route: requests/s, p50 and p99 latency, timeouts and other socket
errors, and non-2xx answers. `--baseline-bin-dir` measures another build first in the same run
(e.g. a release unpacked from dist/) and gives the ratios.

Needs wrk (Debian package wrk).

Usage: bench/rest_load_bench.py [--experiments 1000] [--connections 200] [--seconds 10] [--bin-dir DIR]
                                [--baseline-bin-dir DIR [--rounds N]]
"""

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, simulated_config  # noqa: E402


def store_experiments(c, count):
    """`count` experiments through one kept-alive connection; the id of the last."""
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=60)
    body = json.dumps({"config": simulated_config("stored", 10)})
    headers = {"Authorization": f"Bearer {c.token}", "Content-Type": "application/json"}
    last = 0
    for _ in range(count):
        conn.request("POST", "/api/v1/experiments", body, headers)
        reply = conn.getresponse()
        payload = reply.read()
        assert reply.status == 200, payload
        last = int(json.loads(payload)["experiment"]["id"])
    return last


def finished_trial(c):
    """The id of a trial that ran to the end on the agent, with its metrics stored."""
    exp = c.submit(simulated_config("measured", 2000, seconds_per_batch=0.0005, scheduling_unit=10,
                                    validation_period=500, checkpoint_period=1000))
    c.wait_experiment(exp, ("STATE_COMPLETED",), timeout=600)
    return c.first_trial(exp)


def milliseconds(text):
    value, unit = float(re.match(r"([\d.]+)", text).group(1)), re.sub(r"[\d.]", "", text)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def load(c, path, connections, seconds):
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "2s",
                          "-H", f"Authorization: Bearer {c.token}", c.url + path],
                         capture_output=True, text=True, check=True).stdout
    figures = {"requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
               "p50_ms": milliseconds(re.search(r"\s50%\s+(\S+)", out).group(1)),
               "p99_ms": milliseconds(re.search(r"\s99%\s+(\S+)", out).group(1))}
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    figures["timeouts"] = int(errors.group(4)) if errors else 0
    figures["socket_errors"] = sum(int(errors.group(i)) for i in (1, 2, 3)) if errors else 0
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    figures["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    return figures


def settle(c):
    """Waits until the master answers a light request quickly again: requests a finished wrk
    left queued must not weigh on the next route's figures."""
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=60)
    for _ in range(600):
        start = time.monotonic()
        conn.request("GET", "/api/v1/master")
        conn.getresponse().read()
        if time.monotonic() - start < 0.02:
            return
        time.sleep(0.1)


def measure(bin_dir, args):
    """{route label: figures} for a cluster of `bin_dir`'s det-node (None: this build's)."""
    figures = {}
    c = Cluster(agents=1, bin_dir=bin_dir).start()
    try:
        trial = finished_trial(c)
        c.stop_process(c.agents[0])
        last = store_experiments(c, args.experiments)
        for label, path in (("experiments", "/api/v1/experiments"), ("experiment", f"/api/v1/experiments/{last}"),
                            ("trial metrics", f"/api/v1/trials/{trial}/metrics"), ("agents", "/api/v1/agents")):
            settle(c)
            f = load(c, path, args.connections, args.seconds)
            print(f"{bin_dir or 'this build'}: GET {path}: requests_per_s={f['requests_per_s']:.0f} "
                  f"p50_ms={f['p50_ms']:.1f} p99_ms={f['p99_ms']:.1f} timeouts={f['timeouts']} "
                  f"socket_errors={f['socket_errors']} non_2xx={f['non_2xx']}", flush=True)
            figures[label] = f
    finally:
        c.stop()
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--bin-dir", help="the det-node to measure (default: this build's)")
    ap.add_argument("--baseline-bin-dir", help="another build's bin directory, measured in the same run; each "
                                               "route's p99 and throughput are then given as ratios to it")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --baseline-bin-dir: measure both this many times, alternating which goes first, "
                         "and compare medians (the machine's other load weighs on both alike)")
    args = ap.parse_args()
    if not args.baseline_bin_dir:
        measure(args.bin_dir, args)
        return
    runs = {"baseline": [], "after": []}
    for r in range(args.rounds):
        order = [("baseline", args.baseline_bin_dir), ("after", args.bin_dir)]
        for name, bin_dir in order if r % 2 == 0 else reversed(order):
            runs[name].append(measure(bin_dir, args))
    for label in runs["after"][0]:
        b = {k: statistics.median(run[label][k] for run in runs["baseline"]) for k in ("p99_ms", "requests_per_s")}
        a = {k: statistics.median(run[label][k] for run in runs["after"]) for k in ("p99_ms", "requests_per_s")}
        print(f"GET {label}: median p99 {b['p99_ms']:.1f} -> {a['p99_ms']:.1f} ms (x{a['p99_ms'] / b['p99_ms']:.2f}), "
              f"requests/s {b['requests_per_s']:.0f} -> {a['requests_per_s']:.0f} "
              f"(x{a['requests_per_s'] / b['requests_per_s']:.2f}) over {args.rounds} rounds", flush=True)


if __name__ == "__main__":
    main()

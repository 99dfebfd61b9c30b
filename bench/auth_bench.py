#!/usr/bin/env python3
"""What authentication costs the REST API, and what a login costs.

Starts a master of this build and one of the same sources with the gateway's
authentication compiled out (build/bin/bench_det_node_without_auth), each with one
stored experiment, and runs `wrk` against GET /api/v1/experiments/1 on each in turn
(with a bearer token on the first), `--rounds` times, alternating so that both see
the same machine. Reported: requests/s of each, their ratio, and the time of a
login (POST /api/v1/auth/login, which checks an Argon2id hash), median of 20.

Needs wrk (Debian package wrk).

Usage: bench/auth_bench.py [--seconds 5] [--rounds 5] [--connections 8]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import BIN, Cluster, simulated_config  # noqa: E402


def requests_per_second(cluster, seconds, connections):
    args = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-H", f"Authorization: Bearer {cluster.token}"]
    out = subprocess.run(args + [cluster.url + "/api/v1/experiments/1"], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out:
        raise AssertionError("wrk saw errors:\n" + out)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=8)
    args = ap.parse_args()
    # The baseline's det-node is the bench build, under the name the cluster fixture starts.
    baseline_bin = tempfile.mkdtemp(prefix="det-noauth-")
    os.symlink(os.path.join(os.path.abspath(BIN), "bench_det_node_without_auth"), os.path.join(baseline_bin, "det-node"))
    clusters = {"with auth": Cluster(agents=0), "without": Cluster(agents=0, bin_dir=baseline_bin)}
    try:
        for c in clusters.values():
            c.start()
            c.submit(simulated_config("stored", 10))
        rates = {name: [] for name in clusters}
        for _ in range(args.rounds):
            for name, c in clusters.items():
                rates[name].append(requests_per_second(c, args.seconds, args.connections))
        c = clusters["with auth"]
        logins = []
        for _ in range(20):
            start = time.monotonic()
            c.login("admin", c.admin_password)
            logins.append((time.monotonic() - start) * 1000)
        for name, r in rates.items():
            print(f"{name:10s} GET /api/v1/experiments/1: {statistics.median(r):8.0f} req/s "
                  f"(rounds: {', '.join(f'{x:.0f}' for x in r)})")
        ratio = statistics.median(rates["with auth"]) / statistics.median(rates["without"])
        print(f"with auth / without: {ratio:.3f}")
        print(f"login: median {statistics.median(logins):.0f} ms, max {max(logins):.0f} ms over 20")
    finally:
        for c in clusters.values():
            c.stop()
        shutil.rmtree(baseline_bin, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The master's proxy against going straight to a task's service, in one run:

- bulk download: MB/s of a GET of --bytes (default 1 GiB) from the task's HTTP server through
  /proxy/ID/ and directly, with curl (alternating, --rounds each; the median is reported);
- WebSocket echo: the round trip of a 64-byte message through the proxy and directly, p50 and p99
  over --echoes messages on one connection each.

The service is bench/programs/bulk_server.py, started by the agent in TensorBoard's place
(det-node --tensorboard=...), so the master runs it as it runs any task's service.

Usage: bench/proxy_bench.py [--bytes N] [--rounds 3] [--echoes 2000]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402
from websocket import WebSocket  # noqa: E402


def download_mb_per_s(url, size, headers):
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}"]
    for h in headers:
        args += ["-H", h]
    speed, got = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout.split()
    assert int(got) == size, f"{url}: {got} of {size} bytes"
    return float(speed) / 1e6


def echo_round_trips_us(url, count, headers):
    ws = WebSocket(url, headers=headers)
    message = "x" * 64
    times = []
    for _ in range(count):
        start = time.perf_counter()
        ws.send_text(message)
        opcode, payload = ws.recv()
        times.append((time.perf_counter() - start) * 1e6)
        assert payload.decode() == message
    ws.close()
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--echoes", type=int, default=2000)
    opts = parser.parse_args()
    server = os.path.join(HERE, "programs", "bulk_server.py")
    c = Cluster(agents=1, slots="cpu:1", agent_args=[f"--tensorboard={server}"]).start()
    try:
        exp_id = c.submit(simulated_config("proxy bench", batches=5))
        c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=120)
        task_id = c.post("/api/v1/tensorboards", {"experiment_ids": [exp_id]})["tensorboard"]["id"]
        task = wait_for(lambda: (lambda t: t if t.get("ready") else None)(
            c.get(f"/api/v1/tensorboards/{task_id}")["tensorboard"]), 60, "the service to answer")
        direct_base = f"http://{task['service_address']}/proxy/{task_id}"
        proxy_base = f"{c.url}/proxy/{task_id}"
        auth = [f"Authorization: Bearer {c.token}"]
        direct, proxied = [], []
        for _ in range(opts.rounds):
            direct.append(download_mb_per_s(f"{direct_base}/bytes?n={opts.bytes}", opts.bytes, []))
            proxied.append(download_mb_per_s(f"{proxy_base}/bytes?n={opts.bytes}", opts.bytes, auth))
        d, p = statistics.median(direct), statistics.median(proxied)
        print(f"download of {opts.bytes >> 20} MiB, median of {opts.rounds}: direct {d:.0f} MB/s "
              f"{[round(x) for x in direct]}, through the proxy {p:.0f} MB/s {[round(x) for x in proxied]}, "
              f"proxy / direct {p / d:.2f}")
        d50, d99 = echo_round_trips_us(direct_base.replace("http", "ws", 1) + "/echo", opts.echoes, {})
        p50, p99 = echo_round_trips_us(proxy_base.replace("http", "ws", 1) + "/echo", opts.echoes,
                                       {"Authorization": f"Bearer {c.token}"})
        print(f"WebSocket echo of 64 bytes, {opts.echoes} round trips: direct p50 {d50:.0f} us p99 {d99:.0f} us, "
              f"through the proxy p50 {p50:.0f} us p99 {p99:.0f} us, proxy / direct p50 {p50 / d50:.2f} "
              f"p99 {p99 / d99:.2f}")
    finally:
        c.stop()


if __name__ == "__main__":
    main()

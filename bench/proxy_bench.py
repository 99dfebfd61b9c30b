#!/usr/bin/env python3
"""The master's proxy against going straight to a task's service, in one run:

- bulk download: MB/s of a GET of --bytes (default 1 GiB) from the task's HTTP server through
  /proxy/ID/ on the master's proxy listener (with the cookie a ticket becomes) and directly, with curl (alternating, --rounds each; the median is reported);
- WebSocket echo: the round trip of a 64-byte message through the proxy and directly, p50 and p99
  over --echoes messages on one connection each.

The service is bench/programs/bulk_server.py, started by the agent in TensorBoard's place
(det-node --tensorboard=...), so the master runs it as it runs any task's service.

A build from before the proxy had a listener of its own (no proxy_url in GET /api/v1/master) is
measured on its REST port with a Bearer header, so that DET_BIN_DIR=OLD/bin gives the baseline.

Usage: bench/proxy_bench.py [--bytes N] [--rounds 3] [--echoes 2000]
"""

import argparse
import http.client
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


def proxy_access(c, task_id):
    """(base URL of the task's service through the proxy, the headers that open it)."""
    proxy_url = c.get("/api/v1/master").get("proxy_url")
    if not proxy_url:  # a master from before the proxy listener
        return f"{c.url}/proxy/{task_id}", [f"Authorization: Bearer {c.token}"]
    ticket_url = c.post(f"/api/v1/tasks/{task_id}/proxy_ticket", {})["url"]
    origin = proxy_url.replace("{task_id}", task_id)
    conn = http.client.HTTPConnection(origin.split("//")[1].split(":")[0], int(origin.rsplit(":", 1)[1]))
    conn.request("GET", ticket_url[len(origin):])
    answer = conn.getresponse()
    cookie = answer.headers["Set-Cookie"].split(";")[0]
    conn.close()
    return f"{origin}/proxy/{task_id}", [f"Cookie: {cookie}"]


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
        proxy_base, auth = proxy_access(c, task_id)
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
                                       dict(h.split(": ", 1) for h in auth))
        print(f"WebSocket echo of 64 bytes, {opts.echoes} round trips: direct p50 {d50:.0f} us p99 {d99:.0f} us, "
              f"through the proxy p50 {p50:.0f} us p99 {p99:.0f} us, proxy / direct p50 {p50 / d50:.2f} "
              f"p99 {p99 / d99:.2f}")
    finally:
        c.stop()


if __name__ == "__main__":
    main()

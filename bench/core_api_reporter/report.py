#!/usr/bin/env python3
"""The Core API bench's trial: reports training metrics as fast as one process can through
det_core, then makes as many plain GETs of /api/v1/master on the same kept-alive connection (the baseline:
one REST round trip to the same server that does no work), and prints what it measured for bench/core_api_bench.py."""

import json
import statistics
import time

import det_core

ctx = det_core.Context()
REPORTS = int(ctx.hparams.get("reports", 2000))


def timed(call, n):
    latencies = []
    start = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        call(i)
        latencies.append(time.perf_counter() - t)
    return n / (time.perf_counter() - start), statistics.median(latencies)


for op in ctx.searcher_operations():
    report_rate, report_p50 = timed(lambda i: ctx.report_training_metrics(i + 1, {"loss": 1.0 / (i + 1)}), REPORTS)
    base_rate, base_p50 = timed(lambda i: ctx._call("GET", "/api/v1/master"), REPORTS)
    print("core_api_bench " + json.dumps({"reports_per_second": report_rate, "report_p50_ms": report_p50 * 1e3,
                                          "baseline_per_second": base_rate, "baseline_p50_ms": base_p50 * 1e3}),
          flush=True)
    ctx.report_validation_metrics(op.length, {"validation_loss": 0.5})
    op.report_completed(0.5)

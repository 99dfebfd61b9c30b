#!/usr/bin/python3
"""The web UI's figures (issue 14), each beside a baseline measured in the same run:

1. First load of the experiments page with 1,000 experiments stored, in headless Chromium, to a
   rendered table; baseline: the same page with 10 experiments.
2. A trial with 1,000,000 training points: the series request downsampled to 1,000 points,
   server side (median over rounds); baseline: reading its first 1,000 rows whole
   (/metrics?limit=1000). Then the trial page in Chromium until its training chart is drawn;
   baseline: the same page for a trial with 1,000 points.
3. Report -> point on screen: a live trial reports a validation every ~0.5 s; for 50 of them, the
   time from the worker's report time to the chart holding the point (a MutationObserver in the
   page); baseline: the same reports seen by polling REST every 5 ms from here.

The 1,000,000 rows go straight into the embedded PostgreSQL with one INSERT (psql on its socket):
what a long trial leaves behind, without training one. Usage: bench/webui_bench.py [--rounds 7]"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402
from rest_load_bench import store_experiments  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402


def browser():
    o = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def signed_in(d, c):
    """The browser holds the admin's session as the login page leaves it: the HttpOnly cookie."""
    d.get(c.url + "/login")
    d.add_cookie({"name": "det_session", "value": c.token, "path": "/", "httpOnly": True, "sameSite": "Strict"})


def page_ms(d, c, path, ready_js):
    """Milliseconds from navigation start to `ready_js` being true, polled every 5 ms in the page."""
    d.get(c.url + path)
    return d.execute_async_script("""
      const ready = new Function(arguments[0]); const done = arguments[1];
      (function check() { if (ready()) done(performance.now()); else setTimeout(check, 5); })();""", ready_js)


def psql(c, sql):
    socket_dir = os.path.join(c.data_dir, "run")
    port = glob.glob(os.path.join(socket_dir, ".s.PGSQL.*"))[0].rsplit(".", 1)[1]
    # The master's password file (libpq's format); a baseline build's database asks for none.
    env = dict(os.environ, PGPASSFILE=os.path.join(c.data_dir, "postgres-password"))
    subprocess.run(["psql", "-q", "-h", socket_dir, "-p", port, "-U", "postgres", "-d", "det", "-c", sql], check=True,
                   env=env)


def timed_get(c, path):
    req = urllib.request.Request(c.url + path, headers={"Authorization": f"Bearer {c.token}"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        body = r.read()
    return (time.perf_counter() - start) * 1000, json.loads(body)


def med(xs):
    return statistics.median(xs)


def experiments_page(rounds):
    out = {}
    for count in (10, 1000):
        c = Cluster(agents=0).start()
        d = browser()
        try:
            store_experiments(c, count)
            signed_in(d, c)
            ready = "return document.querySelectorAll('#experiments tr[data-experiment]').length > 0"
            page_ms(d, c, "/experiments", ready)  # warm: the browser's cache of the assets
            out[count] = med([page_ms(d, c, "/experiments", ready) for _ in range(rounds)])
        finally:
            d.quit()
            c.stop()
    print(f"experiments page, first load to a rendered table: {out[1000]:.0f} ms with 1,000 stored, "
          f"{out[10]:.0f} ms with 10 (ratio {out[1000] / out[10]:.2f})")


def long_series(rounds):
    c = Cluster(agents=1, slots="cpu:2").start()
    d = browser()
    try:
        small = c.submit(simulated_config("small", 1000, seconds_per_batch=0.0005, scheduling_unit=1))
        big = c.submit(simulated_config("big", 20, seconds_per_batch=0.0005))
        c.wait_experiment(small, {"STATE_COMPLETED"})
        c.wait_experiment(big, {"STATE_COMPLETED"})
        small_trial, big_trial = c.first_trial(small), c.first_trial(big)
        psql(c, f"INSERT INTO metrics SELECT {big_trial}, 'training', b, b, 0, "
                "jsonb_build_object('loss', 1.0 / b + random() * 0.01), now() FROM generate_series(1000, 1000999) b")
        psql(c, "ANALYZE metrics")
        series = f"/api/v1/trials/{big_trial}/metrics/series?group=training&name=loss&max_points=1000"
        timed_get(c, series)
        s_ms, raw_ms = [], []
        for _ in range(rounds):
            ms, s = timed_get(c, series)
            s_ms.append(ms)
            raw_ms.append(timed_get(c, f"/api/v1/trials/{big_trial}/metrics?group=training&limit=1000")[0])
        assert int(s["points_in_range"]) >= 1000000 and len(s["batches"]) <= 1000, s["points_in_range"]
        print(f"series of 1,000,000 points downsampled to {len(s['batches'])}: {med(s_ms):.0f} ms "
              f"(range {min(s_ms):.0f}-{max(s_ms):.0f}); 1,000 rows read whole: {med(raw_ms):.0f} ms "
              f"(ratio {med(s_ms) / med(raw_ms):.2f})")
        signed_in(d, c)
        ready = "const e = document.querySelector('#chart-training'); return e && Number(e.dataset.points) > 0"
        page_ms(d, c, f"/trials/{small_trial}", ready)
        big_ms = med([page_ms(d, c, f"/trials/{big_trial}", ready) for _ in range(rounds)])
        small_ms = med([page_ms(d, c, f"/trials/{small_trial}", ready) for _ in range(rounds)])
        print(f"trial page to its training chart drawn: {big_ms:.0f} ms for 1,000,000 points, "
              f"{small_ms:.0f} ms for 1,000 (ratio {big_ms / small_ms:.2f})")
    finally:
        d.quit()
        c.stop()


def report_to_screen(reports):
    c = Cluster(agents=1, slots="cpu:2").start()
    d = browser()
    try:
        exp = c.submit(simulated_config("live", 10 ** 7, seconds_per_batch=0.01, validation_period=50,
                                        scheduling_unit=50, checkpoint_period=10 ** 6))
        trial = c.first_trial(exp)
        wait_for(lambda: c.get(f"/api/v1/trials/{trial}/metrics?group=validation")["metrics"], 60, "a validation")
        signed_in(d, c)
        d.get(c.url + f"/trials/{trial}")
        wait_for(lambda: int(d.execute_script("return document.querySelector('#chart-validation')?.dataset.points || 0")) > 0,
                 30, "the chart")
        # The page notes when its validation chart first holds each batch count, in wall-clock ms.
        d.execute_script("""
          window.shown = {};
          const el = document.querySelector('#chart-validation');
          new MutationObserver(() => { const x = el.dataset.lastX; if (!(x in window.shown))
              window.shown[x] = performance.timeOrigin + performance.now(); })
            .observe(el, { attributes: true, attributeFilter: ['data-last-x'] });""")
        known = {int(m["total_batches"]) for m in c.get(f"/api/v1/trials/{trial}/metrics?group=validation&limit=100000")["metrics"]}
        rest_seen = {}  # batches -> (when polling REST first saw it, the report's time)
        while len(rest_seen) < reports:
            for m in c.get(f"/api/v1/trials/{trial}/metrics?group=validation&offset={len(known) + len(rest_seen)}")["metrics"]:
                b = int(m["total_batches"])
                if b not in known and b not in rest_seen:
                    rest_seen[b] = (time.time() * 1000, m["time"])
            time.sleep(0.005)
        time.sleep(1)
        shown = {int(float(k)): v for k, v in d.execute_script("return window.shown").items() if k}
        c.post(f"/api/v1/experiments/{exp}/kill", {})
        from cluster import parse_time
        screen, rest = [], []
        for b, (seen_ms, reported) in sorted(rest_seen.items()):
            if b not in shown:
                continue
            reported_ms = parse_time(reported) * 1000
            screen.append(shown[b] - reported_ms)
            rest.append(seen_ms - reported_ms)
        q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
        print(f"report -> point on screen over {len(screen)} validations: p50 {q(screen, .5):.0f} ms, p95 {q(screen, .95):.0f} ms; "
              f"report -> readable over REST polled every 5 ms: p50 {q(rest, .5):.0f} ms, p95 {q(rest, .95):.0f} ms "
              f"(ratio of p95s {q(screen, .95) / max(1, q(rest, .95)):.2f})")
    finally:
        d.quit()
        c.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reports", type=int, default=50)
    args = ap.parse_args()
    experiments_page(args.rounds)
    long_series(args.rounds)
    report_to_screen(args.reports)


if __name__ == "__main__":
    main()

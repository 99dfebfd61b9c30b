#!/usr/bin/env python3
"""Soak: searches of builtin:simulate trials on 3 agents for HOURS while a random agent is
SIGKILLed every 2 to 4 minutes (and started again 5 s later) and the master every quarter hour
(started again at once). New experiments keep coming while it runs; at the end the clock stops
new ones and every experiment must become terminal. Then it checks, for every experiment:

  - it ended COMPLETED, with as many trials as an undisturbed run of its config has
    (POST /api/v1/preview-hp-search of the same config);
  - every trial COMPLETED at its full length, and its training and validation reports are each
    step once, in order, with no step missing: an acknowledged metric that was lost would leave a
    hole (the trials report training every scheduling_unit batches).

Prints what it did and what broke, and exits 1 if anything did.

Usage: bench/soak.py HOURS [--seed S]   (DET_BIN_DIR: build/bin)
"""

import argparse
import json
import os
import random
import signal
import sys
import time
import urllib.error

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster  # noqa: E402

BATCHES = 600          # each trial's length
UNIT = 50              # a training report every UNIT batches
VALIDATION = 200       # and a validation every VALIDATION
TRIALS = 4             # a random search's trials
IN_FLIGHT = 3          # experiments kept unfinished at once (12 trials for 6 slots)
TERMINAL = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def search_config(name, seed):
    return f"""
name = "{name}"
entrypoint = "builtin:simulate"
max_restarts = 5
min_checkpoint_period = {{ batches = 100 }}
min_validation_period = {{ batches = {VALIDATION} }}
scheduling_unit = {UNIT}
reproducibility = {{ experiment_seed = {seed} }}
[hyperparameters]
x = {{ type = "double", minval = 0.0, maxval = 1.0 }}
[data]
seconds_per_batch = 0.02
[searcher]
name = "random"
metric = "validation_loss"
max_trials = {TRIALS}
max_length = {{ batches = {BATCHES} }}
"""


class Soak:
    def __init__(self, hours, seed):
        self.deadline = time.monotonic() + hours * 3600
        self.rng = random.Random(seed)
        self.c = Cluster(agents=3, slots="cpu:2",
                         master_config="[resource_manager]\nagent_reconnect_wait = 5\n").start()
        self.experiments = {}  # id -> its config
        self.events = {"agent kills": 0, "master kills": 0, "submitted": 0, "request retries": 0}

    def call(self, method, *args):
        """A REST call, retried while the master is down or restarting."""
        for _ in range(600):
            try:
                return method(*args)
            except (urllib.error.URLError, ConnectionError, OSError) as e:
                if isinstance(e, urllib.error.HTTPError) and e.code not in (502, 503, 504):
                    raise
                self.events["request retries"] += 1
                time.sleep(0.5)
        raise RuntimeError(f"the master did not answer {args[0]} for 5 minutes")

    def unfinished(self):
        return [e for e in self.experiments
                if self.call(self.c.get, f"/api/v1/experiments/{e}")["experiment"]["state"] not in TERMINAL]

    def submit(self):
        n = len(self.experiments)
        config = search_config(f"soak-{n}", 1000 + n)
        out = self.call(self.c.post, "/api/v1/experiments", {"config": config, "config_path": f"soak-{n}.toml"})
        self.experiments[int(out["experiment"]["id"])] = config
        self.events["submitted"] += 1

    def kill_agent(self):
        index = self.rng.randrange(len(self.c.agents))
        agent = self.c.agents[index]
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait()
        self.events["agent kills"] += 1
        time.sleep(5)
        self.call(self.c.restart_agent, index)

    def kill_master(self):
        os.kill(self.c.master.pid, signal.SIGKILL)
        self.c.master.wait()
        self.events["master kills"] += 1
        self.c.start_master()

    def run(self):
        now = time.monotonic()
        next_agent_kill = now + self.rng.uniform(120, 240)
        next_master_kill = now + 900
        while time.monotonic() < self.deadline:
            if len(self.unfinished()) < IN_FLIGHT:
                self.submit()
            now = time.monotonic()
            if now >= next_agent_kill:
                self.kill_agent()
                next_agent_kill = time.monotonic() + self.rng.uniform(120, 240)
            if now >= next_master_kill:
                self.kill_master()
                next_master_kill = time.monotonic() + 900
            time.sleep(1)
        settle_until = time.monotonic() + 900
        while self.unfinished():
            if time.monotonic() > settle_until:
                break
            time.sleep(2)

    def problems(self):
        found = []
        for exp_id, config in sorted(self.experiments.items()):
            got = self.call(self.c.get, f"/api/v1/experiments/{exp_id}")
            state = got["experiment"]["state"]
            if state != "STATE_COMPLETED":
                found.append(f"experiment {exp_id} ended {state}")
            preview = self.call(self.c.post, "/api/v1/preview-hp-search", {"config": config})
            expected = sum(int(b["count"]) for b in preview["trials"])
            if len(got["trials"]) != expected:
                found.append(f"experiment {exp_id} has {len(got['trials'])} trials where an undisturbed run has {expected}")
            for t in got["trials"]:
                if t["state"] != "STATE_COMPLETED" or int(t["total_batches"]) != BATCHES:
                    found.append(f"trial {t['id']} ended {t['state']} after {t['total_batches']} batches")
                for group, every in (("training", UNIT), ("validation", VALIDATION)):
                    steps = [int(m["total_batches"]) for m in
                             self.call(self.c.get, f"/api/v1/trials/{t['id']}/metrics?group={group}")["metrics"]]
                    want = list(range(every, BATCHES + 1, every))
                    if steps != want:
                        missing = sorted(set(want) - set(steps))
                        found.append(f"trial {t['id']}: {group} steps {steps} (missing {missing})")
        return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hours", type=float)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    started = time.monotonic()
    soak = Soak(args.hours, args.seed)
    try:
        soak.run()
        found = soak.problems()
    finally:
        soak.c.stop()
    trials = len(soak.experiments) * TRIALS
    print(json.dumps({"hours": round((time.monotonic() - started) / 3600, 2), "experiments": len(soak.experiments),
                      "trials": trials, **soak.events, "problems": len(found)}), flush=True)
    for p in found:
        print("PROBLEM:", p, flush=True)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()

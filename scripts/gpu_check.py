#!/usr/bin/env python3
"""det's whole cluster on a CUDA machine, in one run (scripts/gpu-check.sh unpacks the archive and
calls this): builds the torch trials against the machine's LibTorch, starts a master (embedded
PostgreSQL from the archive) and an agent with --slots auto, checks the GPU slot, trains
builtin:cnn on it with a pause and a resume from its checkpoint and GPU profiling, trains
examples/pytorch-core-api through determined.launch.torch_distributed with NCCL, then runs the
harness and GPT benches. Every step is timed and goes into one table; a failed step is recorded
and the run goes on to the next. Details go to --out (at most a handful of files)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

RESULTS = []  # (step, ok, seconds, detail)
LOG = None


def log(text):
    print(text, flush=True)
    if LOG:
        LOG.write(text + "\n")
        LOG.flush()


def step(name, budget_left):
    """Decorator-like runner: runs fn, records ok/failed, seconds and its detail line."""
    def run(fn):
        if budget_left() <= 0:
            RESULTS.append((name, "skipped", 0.0, "out of time"))
            log(f"== {name}: skipped, out of time")
            return None
        log(f"== {name}")
        start = time.monotonic()
        try:
            detail = fn()
            RESULTS.append((name, "ok", time.monotonic() - start, str(detail or "")))
            log(f"-- {name}: ok ({time.monotonic() - start:.1f} s) {detail or ''}")
            return detail
        except Exception as e:  # a step's failure is a row of the table, not the end of the run
            RESULTS.append((name, "FAILED", time.monotonic() - start, str(e).splitlines()[0][:300] if str(e) else repr(e)))
            log(f"-- {name}: FAILED ({time.monotonic() - start:.1f} s)\n{traceback.format_exc()}")
            return None
    return run


def run(argv, timeout, env=None, cwd=None):
    """Runs a command, its output logged; raises with its tail when it fails."""
    log("$ " + " ".join(argv))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    out = (p.stdout or "") + (p.stderr or "")
    if LOG:
        LOG.write(out[-20000:] + "\n")
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {p.returncode}: " + out.strip()[-600:])
    return p.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--det-home", required=True, help="the unpacked archive (bin/, lib/, scripts/)")
    parser.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                        help="where bench/, examples/ and tests/integration/cluster.py are")
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget", type=float, default=460, help="seconds for the whole check")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--skip-benches", action="store_true", help="the cluster checks only (a dry run on a CPU machine)")
    parser.add_argument("--cnn-batches", type=int, default=20000, help="builtin:cnn's length in the cluster check")
    parser.add_argument("--cnn-batch-size", type=int, default=512)
    args = parser.parse_args()

    global LOG
    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "gpu-check.log"), "a")
    started = time.monotonic()

    def left(reserve=0):
        return lambda: args.budget - reserve - (time.monotonic() - started)

    det_home, repo = os.path.abspath(args.det_home), os.path.abspath(args.repo)
    bench = os.path.join(det_home, "lib", "det", "det-trial-bench")
    os.environ["DET_BIN_DIR"] = os.path.join(det_home, "bin")  # cluster.py's binaries
    sys.path.insert(0, os.path.join(repo, "tests", "integration"))
    sys.path.insert(0, os.path.join(det_home, "scripts"))

    @step("machine", left())
    def machine():
        gpu = run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"], 30).strip()
        torch_version = run([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda)"], 60).strip()
        return f"{gpu}; torch {torch_version}"

    if not args.skip_build:
        @step("build torch trials (scripts/build-torch-trials.sh --torch-from-python)", left())
        def build():
            script = os.path.join(det_home, "scripts", "build-torch-trials.sh")
            try:
                run([script, "--torch-from-python"], 300)
                fallback = ""
            except RuntimeError as e:
                # The fast paths use LibTorch APIs no CPU machine of det's compiles against: without them
                # the rest of the check still runs, and the table says so.
                log(f"the build failed ({e}); building again with -DDET_GPU_FAST_PATHS=OFF")
                run([script, "--torch-from-python", "-DDET_GPU_FAST_PATHS=OFF"], 300)
                fallback = " (WITHOUT the fast paths: the first build failed, see the log)"
            return " ".join(sorted(os.listdir(os.path.join(det_home, "lib", "det")))) + fallback

    @step("det-worker --check-torch-trials", left())
    def check():
        return run([os.path.join(det_home, "bin", "det-worker"), "--check-torch-trials"], 120).strip()

    @step("det-trial-bench builtin:cnn on cuda", left())
    def smoke():
        out = run([bench, "--trial", "cnn", "--hparams", '{"global_batch_size":512}', "--data",
                   '{"dataset":"synthetic","synthetic_train_size":60000}', "--batches", "300", "--report-every", "100"], 180)
        result = json.loads(out.strip().splitlines()[-1])
        return f"{result['samples_per_second']:.0f} samples/s, {result['metric_reads_per_report']} metric reads per report"

    cluster_check(args, det_home, repo, left)
    if args.skip_benches:
        return finish(args)

    @step("harness bench (bench/gpu_harness_bench.py)", left(reserve=110))
    def harness():
        run([sys.executable, os.path.join(repo, "bench", "gpu_harness_bench.py"), "--det-bench", bench,
             "--json", os.path.join(args.out, "harness.json"), "--deadline", str(max(30, left(reserve=110)()))],
            max(60, left(reserve=100)()) + 60)
        return "see harness.json"

    @step("GPT-2 small (bench/gpt_bench.py)", left())
    def gpt():
        run([sys.executable, os.path.join(repo, "bench", "gpt_bench.py"), "--det-bench", bench,
             "--json", os.path.join(args.out, "gpt.json"), "--deadline", str(max(30, left()()))],
            max(60, left()()) + 60)
        return "see gpt.json"

    return finish(args)


def finish(args):
    """Prints and writes the table; 1 when a step failed."""
    table = ["| step | result | seconds | detail |", "|---|---|---|---|"]
    for name, ok, seconds, detail in RESULTS:
        table.append(f"| {name} | {ok} | {seconds:.1f} | {detail.replace('|', '/')} |")
    text = "\n".join(table)
    with open(os.path.join(args.out, "gpu-check.md"), "w") as f:
        f.write(text + "\n")
    log("\n" + text)
    return 0 if all(ok != "FAILED" for _, ok, _, _ in RESULTS) else 1


CNN_CONFIG = """
name = "gpu-check cnn"
entrypoint = "builtin:cnn"
min_checkpoint_period = {{ batches = {checkpoint_every} }}
min_validation_period = {{ batches = {checkpoint_every} }}
[resources]
slots_per_trial = 1
[hyperparameters]
global_batch_size = {batch_size}
channels = 16
[searcher]
name = "single"
metric = "validation_loss"
max_length = {{ batches = {batches} }}
[data]
dataset = "synthetic"
synthetic_train_size = 60000
[profiling]
enabled = true
"""

CORE_API_CONFIG = """
name = "gpu-check pytorch-core-api"
entrypoint = "python3 -m determined.launch.torch_distributed python3 train.py"
[resources]
slots_per_trial = 1
[hyperparameters]
global_batch_size = 256
learning_rate = 0.003
channels = 16
dataset = "synthetic"
train_limit = 20000
validation_limit = 2000
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 300 }
"""


def cluster_check(args, det_home, repo, left):
    try:
        from cluster import Cluster, wait_for
    except ImportError as e:
        RESULTS.append(("cluster", "FAILED", 0.0, f"cannot import cluster.py: {e}"))
        return
    # As root, the embedded PostgreSQL runs as the postgres system user (initdb refuses root).
    if os.geteuid() == 0 and subprocess.run(["id", "postgres"], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], check=False)
    holder = {}

    @step("master + agent --slots auto (archive's det-node, embedded PostgreSQL)", left())
    def start():
        c = Cluster(agents=1, slots="auto", bin_dir=os.path.join(det_home, "bin"))
        holder["cluster"] = c
        c.start()
        agents = c.get("/api/v1/agents")["agents"]
        slots = [s for a in agents for s in a.get("slots", [])]
        return "slots: " + json.dumps([{k: s.get(k) for k in ("type", "device", "uuid", "memory_bytes") if k in s}
                                       for s in slots])[:400]

    c = holder.get("cluster")
    if not c:
        return
    try:
        @step("det slot list", left())
        def slot_list():
            out = c.det("slot", "list")
            if out.returncode != 0:
                raise RuntimeError(out.stderr)
            log(out.stdout)
            if "cuda" not in out.stdout.lower() and "gpu" not in out.stdout.lower():
                raise RuntimeError("no GPU slot in: " + out.stdout[-300:])
            return " / ".join(line.strip() for line in out.stdout.strip().splitlines()[-2:])

        @step("builtin:cnn on the GPU slot: paused, resumed from its checkpoint, COMPLETED", left())
        def cnn():
            # Long enough that the pause lands before the end at GPU speed (about 600 batches a second).
            exp = c.submit(CNN_CONFIG.format(batches=args.cnn_batches, checkpoint_every=max(1, args.cnn_batches // 10),
                                             batch_size=args.cnn_batch_size))
            trial_checkpoints = lambda: c.get(f"/api/v1/experiments/{exp}/checkpoints").get("checkpoints", [])
            wait_for(lambda: trial_checkpoints(), 120, "the first checkpoint", interval=0.2)
            out = c.det("experiment", "pause", str(exp))
            if out.returncode != 0:
                raise RuntimeError("pause: " + out.stderr)
            wait_for(lambda: c.experiment(exp)["trials"][0]["state"] == "STATE_PAUSED", 120, "the pause", interval=0.5)
            out = c.det("experiment", "activate", str(exp))
            if out.returncode != 0:
                raise RuntimeError("activate: " + out.stderr)
            final = c.wait_experiment(exp, ("STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"), timeout=240, interval=0.5)
            trial = final["trials"][0]
            logs = "\n".join(c.trial_logs(trial["id"]))
            if LOG:
                LOG.write(logs[-6000:] + "\n")
            state = final["experiment"]["state"]
            system = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=system")["metrics"]
            util = [m["metrics"].get("gpu0_util_percent") for m in system if "gpu0_util_percent" in m.get("metrics", {})]
            training = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=training")["metrics"]
            speed = [m["metrics"].get("samples_per_second") for m in training][-3:]
            if state != "STATE_COMPLETED":
                raise RuntimeError(f"experiment {exp} ended {state}: {logs[-500:]}")
            if "on cuda" not in logs:
                raise RuntimeError("the trial's log does not say it trained on cuda")
            if "Resuming from checkpoint" not in logs:
                raise RuntimeError("the trial did not resume from its checkpoint")
            if not util:
                raise RuntimeError("no gpu0_util_percent in the trial's system metrics")
            return (f"runs {trial.get('runs')}, resumed from its checkpoint, gpu0_util_percent mean "
                    f"{sum(util) / len(util):.0f} over {len(util)} samples, samples/s {speed}")

        @step("examples/pytorch-core-api on cuda (NCCL, world size 1)", left())
        def core_api():
            model_dir = tempfile.mkdtemp(prefix="det-core-api-", dir="/tmp")
            shutil.copy(os.path.join(repo, "examples", "pytorch-core-api", "train.py"), model_dir)
            exp = c.submit_directory(CORE_API_CONFIG, model_dir)
            final = c.wait_experiment(exp, ("STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"), timeout=240, interval=0.5)
            trial = final["trials"][0]
            logs = "\n".join(c.trial_logs(trial["id"]))
            if LOG:
                LOG.write(logs[-6000:] + "\n")
            if final["experiment"]["state"] != "STATE_COMPLETED":
                raise RuntimeError(f"ended {final['experiment']['state']}: {logs[-600:]}")
            if "trains on cuda" not in logs:
                raise RuntimeError("train.py did not say it trains on cuda")
            checkpoints = c.get(f"/api/v1/experiments/{exp}/checkpoints").get("checkpoints", [])
            validation = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]
            if not checkpoints or not validation:
                raise RuntimeError(f"{len(checkpoints)} checkpoints, {len(validation)} validations")
            return f"{len(checkpoints)} checkpoint(s), validation {validation[-1]['metrics']}"
    finally:
        for name in ("master",) + tuple(a for a, _ in c.agent_specs):
            if LOG:
                LOG.write(f"---- {name}.log (tail)\n{c.log(name)}\n")
        c.stop()


if __name__ == "__main__":
    sys.exit(main())

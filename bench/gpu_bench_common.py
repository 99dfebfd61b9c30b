"""Helpers shared by the GPU benchmarks that set det-trial-bench beside PyTorch training loops
(bench/gpu_harness_bench.py, bench/gpt_bench.py): output, device handling, the timed step loop,
the det-trial-bench path and the reading of its result line, the environment record and the
JSON report file.

Standard library and torch only. The scripts run as `python3 bench/X.py`, which puts this
folder on sys.path, so they import it as `gpu_bench_common`.
"""

import gc
import json
import os
import sys
import time

import torch


def log(*parts):
    print(*parts, flush=True)


def warn(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Device


def resolve_device(name):
    """torch.device(name), a bare "cuda" pinned to the current CUDA device."""
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(step, device, warmup, min_steps, seconds, sampler=None):
    """Calls step() `warmup` times untimed, then until both `min_steps` calls and `seconds` are
    reached, the device synchronised around the timed window (`sampler`, where given, started at
    its opening). Returns (timed steps, elapsed seconds)."""
    for _ in range(warmup):
        step()
    synchronize(device)
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    steps = 0
    while steps < min_steps or time.perf_counter() - start < seconds:
        step()
        steps += 1
    synchronize(device)
    return steps, time.perf_counter() - start


def release_memory(device, reset_peak_memory_stats=False):
    """Collects garbage and empties the CUDA cache (and, if asked, resets its peak-memory
    statistics) after a measurement."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        if reset_peak_memory_stats:
            torch.cuda.reset_peak_memory_stats(device)


def environment(device, cudnn=False):
    env = {"torch": torch.__version__, "python": sys.version.split()[0], "device": str(device)}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
        if cudnn:
            env["cudnn"] = torch.backends.cudnn.version()
    return env


# ----------------------------------------------------------------------------------------------
# det's side: det-trial-bench as a subprocess


def add_det_path_arguments(parser):
    """--det-bench and --no-det, which resolve_det_path reads."""
    parser.add_argument("--det-bench", default=None,
                        help="det-trial-bench binary (default: $DET_HOME/lib/det/det-trial-bench)")
    parser.add_argument("--no-det", action="store_true", help="skip det's side")


def resolve_det_path(args, check_executable=False):
    """(path, note): det-trial-bench from --det-bench or $DET_HOME/lib/det; path None where det is
    skipped, note None where nothing is to be said. With check_executable, a path that is not an
    executable file is kept with a note saying so."""
    if args.no_det:
        return None, "det skipped (--no-det)"
    path = args.det_bench
    if not path and os.environ.get("DET_HOME"):
        path = os.path.join(os.environ["DET_HOME"], "lib", "det", "det-trial-bench")
    if not path:
        return None, "det skipped: no --det-bench and DET_HOME is not set"
    if check_executable and not os.access(path, os.X_OK):
        return path, f"det-trial-bench at {path} is not an executable file (each det run will fail)"
    return path, None


def compact_json(value):
    return json.dumps(value, separators=(",", ":"))


def read_det_result(entry, stdout_lines, rate_key, stderr_tail):
    """Fills `entry` from det-trial-bench's output: `result` (its last stdout line as JSON),
    entry[rate_key] when it exited 0 with a positive rate there, else `error` and the output's
    tails. Returns the rate or None."""
    result = None
    if stdout_lines:
        try:
            result = json.loads(stdout_lines[-1])
        except ValueError:
            result = None
    exit_code = entry.get("exit_code")
    if isinstance(result, dict):
        entry["result"] = result
        value = result.get(rate_key)
        if exit_code == 0 and isinstance(value, (int, float)) and value > 0:
            entry[rate_key] = float(value)
            return entry[rate_key]
        problem = f"exit code {exit_code}" if exit_code != 0 else f"no positive {rate_key} in its JSON"
        if result.get("error"):
            problem += f": {result['error']}"
    else:
        problem = "its last stdout line is not a JSON object"
        if exit_code not in (0, None):
            problem = f"exit code {exit_code}; {problem}"
    entry.setdefault("error", problem)
    entry["stderr_tail"] = stderr_tail
    entry["stdout_tail"] = stdout_lines[-5:]
    return None


# ----------------------------------------------------------------------------------------------
# Report


def write_json(path, report):
    """Writes `report` to `path` (nothing without a path) through a temporary file, so a reader
    never sees half of it."""
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, default=str)
    os.replace(tmp, path)

#!/usr/bin/env python3
"""det's training loop beside three PyTorch training loops on the same GPU, models and data.

What it measures: training throughput (samples/s, steady state) and mean GPU utilisation (NVML,
sampled every 50 ms while timing) of builtin:mlp and builtin:cnn, for each model x batch size x
precision, trained by
  - det:      det-trial-bench (det's C++ trial loop), one subprocess per configuration, without
              and with --cuda-graph (--det-variants); the best of the two is det's figure;
  - eager:    PyTorch as a user writes it: data in CPU tensors, a shuffled batch gathered on the
              CPU (index_select on a randperm) and copied with .to('cuda'), zero_grad, forward,
              loss, backward, Adam step, loss.item() after every batch;
  - expert:   data resident on the GPU, shuffled index_select there, Adam(fused=True),
              zero_grad(set_to_none=True), losses summed on the GPU and read every 100 batches;
  - compile:  the expert loop with the whole train step (forward, backward, optimizer step) under
              torch.compile(mode="reduce-overhead"), its Adam the default foreach one (the fused
              kernel is opaque to dynamo; inductor fuses the update itself); if that fails, the
              model alone is compiled, with fused Adam (the output says so). Compile time (the
              first 5 steps) is excluded and reported on its own. Runs only for --compile-configs
              (each distinct shape costs tens of seconds of compiling).
The models are det's built-ins (gpu/mlp_model.cpp, gpu/harness.cpp): mlp = 784-256-128-10 with
ReLU and dropout 0.1; cnn = conv 1->16 3x3, ReLU, maxpool 2, conv 16->32 3x3, ReLU, maxpool 2,
linear 800->10. Cross-entropy, Adam lr 1e-3. Data: det's synthetic set (the same generator seed
and draws as make_synthetic_split, so the very same samples): 10 centroids randn(10, 784) * 0.1,
inputs = centroid[label] + randn, 60,000 training samples. bf16 = torch.autocast(bfloat16) around
the forward and loss (det: --mixed-precision O1); for cnn in bf16 the expert and compile loops use
channels_last. cudnn.benchmark is on for all.

Order: first every configuration's det, eager and expert figures, batch size by batch size (a
Markdown row is printed as each completes), then the compile pass over --compile-configs, then
the whole table. After
--deadline seconds no new measurement starts; what was skipped is listed. --json PATH is
rewritten after every measurement, so a run cut short still leaves its results. The defaults
(--seconds 1, --compile-configs 64,512, --deadline 180) aim at about 3 minutes on an H100/H200:
the first pass takes about 2 of them (two det start-ups per configuration dominate), and the
compile pass gets the rest, in --batches order.

Run on a CUDA machine (det-trial-bench from DET_HOME/lib/det unless --det-bench names it):
  PYTHONUNBUFFERED=1 python3 bench/gpu_harness_bench.py --json harness_bench.json
Quick check without a GPU or det:
  python3 bench/gpu_harness_bench.py --device cpu --models mlp --batches 64 --precisions fp32 \\
      --seconds 0.5 --no-det
"""

import argparse
import math
import subprocess
import sys
import tempfile
import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from gpu_bench_common import (add_det_path_arguments, compact_json, environment, log, read_det_result,
                              release_memory, resolve_det_path, resolve_device, synchronize, timed_steps,
                              warn, write_json)

INPUT_SIZE = 28 * 28
CLASSES = 10
SYNTHETIC_DATA_SEED = 20240601  # det's synthetic_data_seed (gpu/mlp_model.cpp)
LEARNING_RATE = 1e-3
LOSS_READ_EVERY = 100  # the expert and compile loops read their summed loss this often
COMPILE_CALLS = 5  # calls timed as "compile": tracing, compiling, CUDA-graph warm-up and recording
NVML_PERIOD_S = 0.05
ALL_MODELS = ("cnn", "mlp")
ALL_BATCHES = (64, 512, 4096)
ALL_PRECISIONS = ("fp32", "bf16")


# ----------------------------------------------------------------------------------------------
# Models: det's builtin:mlp and builtin:cnn with their default hyperparameters.


def make_mlp():
    return nn.Sequential(
        nn.Linear(INPUT_SIZE, 256), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(128, CLASSES))


class Cnn(nn.Module):
    def __init__(self, channels=16, channels_last=False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3)
        self.fc = nn.Linear(2 * channels * 5 * 5, CLASSES)
        self.channels_last = channels_last

    def forward(self, flat):
        x = flat.view(-1, 1, 28, 28)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 26 -> 13
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 11 -> 5
        return self.fc(x.flatten(1))


def make_model(name, device, channels_last=False):
    torch.manual_seed(0)
    if name == "mlp":
        return make_mlp().to(device)
    model = Cnn(channels_last=channels_last).to(device)
    return model.to(memory_format=torch.channels_last) if channels_last else model


def make_adam(params, fused=False):
    if fused:
        try:
            return torch.optim.Adam(params, lr=LEARNING_RATE, fused=True)
        except (TypeError, RuntimeError) as e:
            warn(f"Adam(fused=True) unavailable ({e}); using the default Adam")
    return torch.optim.Adam(params, lr=LEARNING_RATE)


def autocast(device, precision):
    """bf16: autocast the forward and loss to bfloat16 (det's O1); fp32: a disabled autocast."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=(precision == "bf16"))


# ----------------------------------------------------------------------------------------------
# Data


def make_synthetic_train_split(n):
    """det's make_synthetic_split for the training split, draw for draw (LibTorch's CPU generator
    and PyTorch's are the same), so both sides train on the same samples."""
    generator = torch.Generator().manual_seed(SYNTHETIC_DATA_SEED)
    centroids = torch.randn(CLASSES, INPUT_SIZE, generator=generator) * 0.1
    labels = torch.randint(CLASSES, (n,), generator=generator)
    inputs = centroids.index_select(0, labels) + torch.randn(n, INPUT_SIZE, generator=generator)
    return inputs, labels


class ShuffledBatches:
    """Batches of a new random permutation each epoch, gathered with index_select where the data
    lives; the last partial batch of an epoch is dropped (as det does)."""

    def __init__(self, inputs, labels, batch_size):
        self.inputs, self.labels, self.batch_size = inputs, labels, batch_size
        self.order, self.position = None, 0

    def next(self):
        n = self.labels.size(0)
        if self.order is None or self.position + self.batch_size > n:
            self.order = torch.randperm(n, device=self.inputs.device)
            self.position = 0
        index = self.order[self.position:self.position + self.batch_size]
        self.position += self.batch_size
        return self.inputs.index_select(0, index), self.labels.index_select(0, index)


# ----------------------------------------------------------------------------------------------
# GPU utilisation from NVML


def nvml_index(device):
    """NVML's index of the torch device (torch's own mapping through CUDA_VISIBLE_DEVICES where
    this torch has it)."""
    try:
        return torch.cuda._get_nvml_device_index(device)
    except Exception:
        return device.index or 0


COMPUTE_MODES = {0: "default", 1: "exclusive thread", 2: "prohibited", 3: "exclusive process"}


class UtilizationSampler:
    """Samples nvmlDeviceGetUtilizationRates(handle).gpu every 50 ms in a thread between start()
    and stop(); unavailable (every mean None) off CUDA or without a working pynvml."""

    def __init__(self, device):
        self.handle, self.error, self.samples, self.compute_mode = None, None, [], None
        self._thread, self._stop = None, threading.Event()
        if device.type != "cuda":
            self.error = "not a CUDA device"
            return
        try:
            import pynvml
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(nvml_index(device))
            pynvml.nvmlDeviceGetUtilizationRates(self.handle)
            self._pynvml = pynvml
        except Exception as e:  # no pynvml, no driver, ...
            self.handle, self.error = None, f"NVML unavailable: {e!r}"
            return
        try:
            self.compute_mode = COMPUTE_MODES.get(pynvml.nvmlDeviceGetComputeMode(self.handle), "unknown")
        except Exception:
            self.compute_mode = None

    def start(self):
        self.samples = []
        if self.handle is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                util = self._pynvml.nvmlDeviceGetUtilizationRates(self.handle).gpu
                self.samples.append((time.perf_counter(), float(util)))
            except Exception as e:
                self.error = f"NVML read failed: {e!r}"
                return
            self._stop.wait(NVML_PERIOD_S)

    def stop(self):
        """Stops sampling; returns the mean of all samples (None without any)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        return self.mean()

    def mean(self, since=None, until=None):
        values = [u for t, u in self.samples
                  if (since is None or t >= since) and (until is None or t <= until)]
        return sum(values) / len(values) if values else None


# ----------------------------------------------------------------------------------------------
# Timing


def time_loop(loop, batch_size, device, args, sampler):
    """Warm-up batches, then batches until both --seconds and --min-batches are reached, with the
    device synchronised around the timed window."""
    batches, elapsed = timed_steps(loop.step, device, args.warmup, args.min_batches, args.seconds, sampler)
    util = sampler.stop()
    return {"samples_per_second": batches * batch_size / elapsed, "batches": batches,
            "seconds": round(elapsed, 4), "gpu_util_percent": util, "last_loss": loop.last_loss()}


# ----------------------------------------------------------------------------------------------
# The PyTorch loops. Each has step() (one training batch, data included) and last_loss().


class EagerLoop:
    """As a user writes it: CPU data, CPU gather, .to(device), loss.item() every batch."""

    def __init__(self, model_name, precision, batch_size, data, device):
        self.model = make_model(model_name, device)
        self.optimizer = make_adam(self.model.parameters())
        self.batches = ShuffledBatches(data.cpu_inputs, data.cpu_labels, batch_size)
        self.device, self.precision, self.loss = device, precision, None

    def step(self):
        inputs, labels = self.batches.next()
        inputs, labels = inputs.to(self.device), labels.to(self.device)
        self.optimizer.zero_grad()
        with autocast(self.device, self.precision):
            loss = F.cross_entropy(self.model(inputs), labels)
        loss.backward()
        self.optimizer.step()
        self.loss = loss.item()

    def last_loss(self):
        return self.loss


class LossAccumulator:
    """Sums losses on the device; reads the sum back every LOSS_READ_EVERY batches."""

    def __init__(self, device):
        self.total = torch.zeros((), device=device)
        self.count, self.last = 0, None

    def add(self, loss):
        self.total += loss
        self.count += 1
        if self.count % LOSS_READ_EVERY == 0:
            self.last = self.total.item() / LOSS_READ_EVERY
            self.total.zero_()


class ExpertLoop:
    """Device-resident data, fused Adam, set_to_none, losses read every 100 batches."""

    def __init__(self, model_name, precision, batch_size, data, device):
        channels_last = model_name == "cnn" and precision == "bf16"
        self.model = make_model(model_name, device, channels_last=channels_last)
        self.optimizer = make_adam(self.model.parameters(), fused=device.type == "cuda")
        self.batches = ShuffledBatches(data.device_inputs, data.device_labels, batch_size)
        self.device, self.precision = device, precision
        self.losses = LossAccumulator(device)

    def step(self):
        inputs, labels = self.batches.next()
        self.optimizer.zero_grad(set_to_none=True)
        with autocast(self.device, self.precision):
            loss = F.cross_entropy(self.model(inputs), labels)
        loss.backward()
        self.optimizer.step()
        self.losses.add(loss.detach())

    def last_loss(self):
        return self.losses.last


def mark_cudagraph_step():
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if mark is not None:
        mark()


class CompiledLoop:
    """The expert loop with its train step under torch.compile(mode="reduce-overhead"), compiled
    (and CUDA-graphed) by its first COMPILE_CALLS steps, whose time is `compile_seconds`.

    whole_step: forward, loss, backward and optimizer step in one compiled function (dynamo breaks
    the graph at backward and runs zero_grad eagerly; inductor compiles the optimizer step). Its
    Adam is the default (foreach) one: torch hides the fused kernel from dynamo, and inductor
    generates its own fused kernels for the foreach update. Otherwise only the model is compiled
    and the rest is the expert step (fused Adam)."""

    def __init__(self, model_name, precision, batch_size, data, device, whole_step=True):
        self.batches = ShuffledBatches(data.device_inputs, data.device_labels, batch_size)
        self.losses = LossAccumulator(device)
        self.device = device
        self.mode = "whole step" if whole_step else "model only"
        channels_last = model_name == "cnn" and precision == "bf16"
        model = make_model(model_name, device, channels_last=channels_last)
        device_type, use_bf16 = device.type, precision == "bf16"
        if whole_step:
            optimizer = make_adam(model.parameters())

            def train_step(inputs, labels):
                with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=use_bf16):
                    loss = F.cross_entropy(model(inputs), labels)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                return loss.detach()

            self.train_step = torch.compile(train_step, mode="reduce-overhead")
        else:
            optimizer = make_adam(model.parameters(), fused=device.type == "cuda")
            compiled_model = torch.compile(model, mode="reduce-overhead")

            def train_step(inputs, labels):
                optimizer.zero_grad(set_to_none=True)
                with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=use_bf16):
                    loss = F.cross_entropy(compiled_model(inputs), labels)
                loss.backward()
                optimizer.step()
                return loss.detach()

            self.train_step = train_step
        self.model, self.optimizer = model, optimizer
        synchronize(device)
        start = time.perf_counter()
        for _ in range(COMPILE_CALLS):
            self.step()
        synchronize(device)
        self.compile_seconds = time.perf_counter() - start

    def step(self):
        inputs, labels = self.batches.next()
        mark_cudagraph_step()
        loss = self.train_step(inputs, labels)
        self.losses.add(loss)  # read before the next replay may overwrite the graph's output

    def last_loss(self):
        return self.losses.last


LOOPS = {"eager": EagerLoop, "expert": ExpertLoop, "compile": CompiledLoop}


def compiler_counters():
    """Graph breaks and CUDA-graph skips dynamo and inductor counted (best effort)."""
    try:
        from torch._dynamo.utils import counters
        return {"graph_breaks": sum(counters["graph_break"].values()),
                "cudagraph_skips": counters["inductor"].get("cudagraph_skips", 0),
                "unique_graphs": counters["stats"].get("unique_graphs", 0)}
    except Exception:
        return None


def reset_compiler():
    try:
        torch._dynamo.reset()
    except Exception as e:
        warn(f"torch._dynamo.reset() failed: {e!r}")
    try:
        from torch._inductor import cudagraph_trees
        cudagraph_trees.reset_cudagraph_trees()
    except Exception:
        pass
    try:
        from torch._dynamo.utils import counters
        counters.clear()
    except Exception:
        pass


def measure_baseline(kind, model_name, batch_size, precision, data, device, args, sampler, **loop_options):
    """One PyTorch loop's measurement; failures become an entry with `error`."""
    loop = None
    try:
        loop = LOOPS[kind](model_name, precision, batch_size, data, device, **loop_options)
        result = time_loop(loop, batch_size, device, args, sampler)
        if kind == "compile":
            result.update(compile_seconds=round(loop.compile_seconds, 2), compile_mode=loop.mode,
                          counters=compiler_counters())
        return result
    except Exception as e:
        sampler.stop()
        return {"samples_per_second": None, "error": f"{type(e).__name__}: {e}"[:1000]}
    finally:
        del loop
        if kind == "compile":
            reset_compiler()
        release_memory(device)


def measure_compile(model_name, batch_size, precision, data, device, args, sampler, deadline):
    """The whole step compiled; if anything in that measurement fails, the model alone."""
    entry = measure_baseline("compile", model_name, batch_size, precision, data, device, args, sampler,
                             whole_step=True)
    if rate(entry):
        return entry
    reason = entry.get("error")
    warn(f"torch.compile of the whole train step failed ({reason}); trying the model alone")
    if deadline.left() < args.compile_min_left / 2:
        return {"samples_per_second": None, "error": f"whole step: {reason}; no time left to compile the model alone"}
    entry = measure_baseline("compile", model_name, batch_size, precision, data, device, args, sampler,
                             whole_step=False)
    entry["compile_fallback_reason"] = reason
    if not rate(entry):
        entry["error"] = f"whole step: {reason}; model only: {entry.get('error')}"
    return entry


# ----------------------------------------------------------------------------------------------
# det's side: det-trial-bench as a subprocess


def run_det_bench(det_path, model_name, batch_size, precision, cuda_graph, plan, args, sampler, timeout):
    """Runs det-trial-bench once (`plan`: its batches and report period); its last stdout line is
    a JSON object. GPU utilisation is the mean of our NVML samples over the
    batches*batch/samples_per_second seconds before that line (its training, not its start-up)."""
    batches, report_every = plan
    cmd = [det_path, "--trial", model_name,
           "--hparams", compact_json({"global_batch_size": batch_size}),
           "--data", compact_json({"dataset": "synthetic", "synthetic_train_size": args.train_size,
                                   "synthetic_val_size": 1000}),
           "--batches", str(batches), "--mixed-precision", "O1" if precision == "bf16" else "O0",
           "--report-every", str(report_every)]
    if cuda_graph:
        cmd.append("--cuda-graph")
    entry = {"command": cmd, "samples_per_second": None}
    lines = []  # (arrival time, line)
    with tempfile.TemporaryFile(mode="w+") as stderr:
        sampler.start()
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1)
        except OSError as e:
            sampler.stop()
            entry["error"] = f"could not start: {e}"
            return entry

        def read_stdout():
            for line in proc.stdout:
                lines.append((time.perf_counter(), line.rstrip("\n")))

        reader = threading.Thread(target=read_stdout, daemon=True)
        reader.start()
        try:
            entry["exit_code"] = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            entry["exit_code"] = None
            entry["error"] = f"timed out after {timeout:.0f} s"
        reader.join(timeout=5)
        sampler.stop()
        entry["wall_seconds"] = round(time.perf_counter() - started, 2)
        stderr.seek(0)
        stderr_tail = stderr.read()[-1500:]

    nonempty = [(t, line) for t, line in lines if line.strip()]
    result_time = nonempty[-1][0] if nonempty else None
    sps = read_det_result(entry, [line for _, line in nonempty], "samples_per_second", stderr_tail)
    if sps:
        result = entry["result"]
        entry["metric_reads_per_report"] = result.get("metric_reads_per_report", result.get("metric_reads"))
        entry["det_reported_gpu_util_percent"] = result.get("gpu_util_percent")
        training_s = batches * batch_size / sps
        entry["gpu_util_percent"] = sampler.mean(since=max(started, result_time - training_s), until=result_time)
    return entry


def det_plan_for(row, batch_size, args):
    """det's --batches and --report-every: about --seconds of batches at the faster PyTorch loop's
    rate, in at least 5 report periods after a first one (det-trial-bench reports the median of
    the periods' samples/s after the first, which holds the start-up); periods of at most
    --det-report-every batches (the expert loop's loss-read period)."""
    rates = [row["baselines"][k].get("samples_per_second") for k in ("eager", "expert")]
    rates = [r for r in rates if r]
    timed = math.ceil(args.seconds * max(rates) / batch_size) if rates else 200
    timed = max(args.min_batches, timed)
    report_every = min(args.det_report_every, max(5, math.ceil(timed / 5)))
    periods = max(5, math.ceil(timed / report_every)) + 1
    return report_every * periods, report_every


# ----------------------------------------------------------------------------------------------
# Configurations, deadline, report


class Deadline:
    def __init__(self, seconds):
        self.start, self.seconds = time.perf_counter(), seconds

    def elapsed(self):
        return time.perf_counter() - self.start

    def left(self):
        return self.seconds - self.elapsed()


def parse_compile_configs(spec):
    """'none', 'all', or a comma list of model:batch:precision with * as a wildcard; a bare
    number N means *:N:*. Returns a list of (model, batch, precision) patterns."""
    spec = spec.strip().lower()
    if spec in ("", "none"):
        return []
    if spec == "all":
        return [("*", "*", "*")]
    patterns = []
    for item in spec.split(","):
        item = item.strip()
        parts = item.split(":") if ":" in item else ["*", item, "*"]
        if len(parts) != 3:
            raise SystemExit(f"--compile-configs: '{item}' is not model:batch:precision")
        patterns.append(tuple(parts))
    return patterns


def compile_selected(patterns, model, batch, precision):
    for m, b, p in patterns:
        if m in ("*", model) and b in ("*", str(batch)) and p in ("*", precision):
            return True
    return False


def rate(entry):
    return entry.get("samples_per_second") if entry else None


def best_det(row):
    runs = {k: v for k, v in row["det"].items() if rate(v)}
    if not runs:
        return None, None
    variant = max(runs, key=lambda k: rate(runs[k]))
    return variant, runs[variant]


def best_baseline(row):
    runs = {k: v for k, v in row["baselines"].items() if rate(v)}
    if not runs:
        return None, None
    kind = max(runs, key=lambda k: rate(runs[k]))
    return kind, runs[kind]


def summarise(row):
    det_variant, det = best_det(row)
    base_kind, base = best_baseline(row)
    row["summary"] = {
        "det_best_variant": det_variant, "det_samples_per_second": rate(det),
        "best_baseline": base_kind, "best_baseline_samples_per_second": rate(base),
        "det_over_best_baseline": rate(det) / rate(base) if det and base else None,
        "det_gpu_util_percent": det.get("gpu_util_percent") if det else None,
        "best_baseline_gpu_util_percent": base.get("gpu_util_percent") if base else None,
    }


def cell(entry):
    if entry is None:
        return "—"
    if rate(entry):
        return f"{rate(entry):,.0f}"
    if entry.get("skipped"):
        return "skipped"
    return "error"


def percent(value):
    return "—" if value is None else f"{value:.0f}"


TABLE_HEADER = ("| model | batch | precision | det samples/s | eager | expert | compile | det ÷ best baseline "
                "| GPU util % det | GPU util % best baseline |\n"
                "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")


def table_row(row):
    s = row["summary"]
    det_cell = "error" if row["det"] else "—"
    if s["det_samples_per_second"]:
        others = [f"{variant} {rate(entry):,.0f}" for variant, entry in row["det"].items()
                  if variant != s["det_best_variant"] and rate(entry)]
        det_cell = f"{s['det_samples_per_second']:,.0f} ({'; '.join([s['det_best_variant']] + others)})"
    elif row["det"] and all(v.get("skipped") for v in row["det"].values()):
        det_cell = "skipped"
    ratio = s["det_over_best_baseline"]
    ratio_cell = f"{ratio:.2f} (vs {s['best_baseline']})" if ratio else "—"
    base = row["baselines"]
    base_util = percent(s["best_baseline_gpu_util_percent"])
    if s["best_baseline"] and s["best_baseline_gpu_util_percent"] is not None:
        base_util += f" ({s['best_baseline']})"
    return (f"| {row['model']} | {row['batch']} | {row['precision']} | {det_cell} | {cell(base.get('eager'))} "
            f"| {cell(base.get('expert'))} | {cell(base.get('compile'))} | {ratio_cell} "
            f"| {percent(s['det_gpu_util_percent'])} | {base_util} |")


def row_notes(row):
    """One line per error, skip, compile fallback or det variant, for the notes under the table."""
    name = f"{row['model']} {row['batch']} {row['precision']}"
    notes = []
    for variant, entry in row["det"].items():
        if entry.get("skipped"):
            notes.append(f"{name}: det {variant} skipped ({entry['skipped']})")
        elif entry.get("error"):
            notes.append(f"{name}: det {variant} failed: {entry['error']}; stderr: {entry.get('stderr_tail', '')[-300:]!r}")
        else:
            notes.append(f"{name}: det {variant} {rate(entry):,.0f} samples/s, GPU util "
                         f"{percent(entry.get('gpu_util_percent'))} % (det's own: {percent(entry.get('det_reported_gpu_util_percent'))}), "
                         f"metric reads per report {entry.get('metric_reads_per_report')}")
    for kind, entry in row["baselines"].items():
        if entry.get("skipped"):
            notes.append(f"{name}: {kind} skipped ({entry['skipped']})")
        elif entry.get("error"):
            notes.append(f"{name}: {kind} failed: {entry['error']}")
        elif kind == "compile":
            notes.append(f"{name}: compile ({entry.get('compile_mode')}) took {entry.get('compile_seconds')} s to "
                         f"compile; counters {entry.get('counters')}"
                         + (f"; whole-step failure: {entry['compile_fallback_reason']}"
                            if entry.get("compile_fallback_reason") else ""))
    return notes


# ----------------------------------------------------------------------------------------------
# Main


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--models", default=",".join(ALL_MODELS), help="comma list of cnn, mlp")
    p.add_argument("--batches", default=",".join(map(str, ALL_BATCHES)), help="comma list of batch sizes")
    p.add_argument("--precisions", default=",".join(ALL_PRECISIONS), help="comma list of fp32, bf16")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="timed wall time of each measurement (det: batches for about this long)")
    p.add_argument("--warmup", type=int, default=30, help="untimed batches before timing")
    p.add_argument("--min-batches", type=int, default=50, help="timed batches at least")
    p.add_argument("--train-size", type=int, default=60000, help="synthetic training samples (all systems)")
    p.add_argument("--compile-configs", default="64,512",
                   help="which configurations get the compile baseline: 'none', 'all', or a comma list of "
                        "model:batch:precision (* wildcard) or bare batch sizes (default: 64,512)")
    p.add_argument("--deadline", type=float, default=180.0,
                   help="seconds after start past which no measurement starts (the rest is skipped)")
    p.add_argument("--compile-min-left", type=float, default=35.0,
                   help="start a compile measurement only with this many seconds left before the deadline")
    add_det_path_arguments(p)
    p.add_argument("--det-variants", default="eager,graph",
                   help="comma list: eager (det's default loop), graph (--cuda-graph)")
    p.add_argument("--det-report-every", type=int, default=LOSS_READ_EVERY,
                   help="det's --report-every at most (shorter where a run has fewer than 5 such periods)")
    p.add_argument("--det-timeout", type=float, default=90.0, help="seconds one det-trial-bench run may take")
    p.add_argument("--json", default=None, help="write all results as JSON to this path")
    args = p.parse_args()
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    args.precisions = [q.strip() for q in args.precisions.split(",") if q.strip()]
    args.det_variants = [v.strip() for v in args.det_variants.split(",") if v.strip()]
    for m in args.models:
        if m not in ALL_MODELS:
            p.error(f"unknown model {m}")
    for q in args.precisions:
        if q not in ALL_PRECISIONS:
            p.error(f"unknown precision {q}")
    for v in args.det_variants:
        if v not in ("eager", "graph"):
            p.error(f"unknown det variant {v}")
    args.compile_patterns = parse_compile_configs(args.compile_configs)
    return args


def configure_torch(device):
    torch.backends.cudnn.benchmark = True
    try:
        from torch._dynamo import config
        # Newer torch calls these recompile_limit / accumulated_recompile_limit (the old names
        # are aliases); set whichever exist.
        for name, value in (("recompile_limit", 64), ("cache_size_limit", 64),
                            ("accumulated_recompile_limit", 1024), ("accumulated_cache_size_limit", 1024)):
            if hasattr(config, name):
                try:
                    setattr(config, name, value)
                except Exception:
                    pass
    except Exception:
        pass  # torch without dynamo: the compile baseline is skipped anyway


def compile_unavailable_reason(device):
    if device.type != "cuda":
        return "not on CUDA"
    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    return None


class Data:
    def __init__(self, train_size, device):
        start = time.perf_counter()
        self.cpu_inputs, self.cpu_labels = make_synthetic_train_split(train_size)
        self.device_inputs = self.cpu_inputs.to(device)
        self.device_labels = self.cpu_labels.to(device)
        self.seconds = time.perf_counter() - start


def measure_pass_one(row, data, device, args, sampler, det_path, deadline):
    """det, eager and expert for one configuration; compile is left for the second pass."""
    model, batch, precision = row["model"], row["batch"], row["precision"]
    for kind in ("eager", "expert"):
        if deadline.left() < args.seconds + 2:
            row["baselines"][kind] = {"skipped": "deadline"}
            continue
        row["baselines"][kind] = measure_baseline(kind, model, batch, precision, data, device, args, sampler)
    if det_path:
        plan = det_plan_for(row, batch, args)
        for variant in args.det_variants:
            if deadline.left() < args.seconds + 5:
                row["det"][variant] = {"skipped": "deadline"}
                continue
            timeout = min(args.det_timeout, max(20.0, deadline.left() + 10))
            row["det"][variant] = run_det_bench(det_path, model, batch, precision, variant == "graph",
                                                plan, args, sampler, timeout)


def main():
    args = parse_args()
    deadline = Deadline(args.deadline)
    device = resolve_device(args.device)
    configure_torch(device)
    det_path, det_note = resolve_det_path(args, check_executable=True)
    sampler = UtilizationSampler(device)
    data = Data(args.train_size, device)
    no_compile = compile_unavailable_reason(device)

    report = {"environment": environment(device, cudnn=True), "args": {k: v for k, v in vars(args).items()},
              "det_bench": det_path, "nvml": sampler.error or "ok", "compute_mode": sampler.compute_mode,
              "rows": [], "skipped": [], "notes": []}
    if det_note:
        report["notes"].append(det_note)
    if sampler.compute_mode not in (None, "default") and det_path:
        report["notes"].append(f"the GPU's compute mode is {sampler.compute_mode}: det-trial-bench may be refused "
                               "the GPU while this process holds it")
    if no_compile and args.compile_patterns:
        report["notes"].append(f"compile baseline skipped: {no_compile}")
    log(f"# det vs PyTorch training loops on {report['environment'].get('gpu', device)} "
        f"(torch {torch.__version__}); data: {args.train_size} synthetic samples made in {data.seconds:.1f} s")
    log(f"# timing: {args.warmup} warm-up batches, then >= {args.seconds} s and >= {args.min_batches} batches; "
        f"NVML: {report['nvml']}; deadline {args.deadline:.0f} s")
    for note in report["notes"]:
        log(f"# {note}")
    log("")
    log(TABLE_HEADER)

    rows = []
    for model in args.models:
        for batch in args.batches:
            for precision in args.precisions:
                rows.append({"model": model, "batch": batch, "precision": precision, "det": {}, "baselines": {}})
    report["rows"] = rows

    # Pass 1: det, eager, expert; batch size by batch size, both models at each, so that a run cut
    # short by the deadline still has both models.
    def measuring_order(row):
        return (args.batches.index(row["batch"]), args.precisions.index(row["precision"]),
                args.models.index(row["model"]))

    for row in sorted(rows, key=measuring_order):
        measure_pass_one(row, data, device, args, sampler, det_path, deadline)
        summarise(row)
        log(table_row(row))
        write_json(args.json, report)

    # Pass 2: compile, in the same order (the default batch sizes put 64 first, where launch
    # overhead matters most).
    for row in sorted(rows, key=measuring_order):
        name = f"{row['model']}:{row['batch']}:{row['precision']}"
        if not compile_selected(args.compile_patterns, row["model"], row["batch"], row["precision"]):
            report["skipped"].append(f"compile {name}: not in --compile-configs")
            continue
        if no_compile:
            report["skipped"].append(f"compile {name}: {no_compile}")
            continue
        if deadline.left() < args.compile_min_left:
            row["baselines"]["compile"] = {"skipped": "deadline"}
            report["skipped"].append(f"compile {name}: deadline")
            continue
        log(f"# compiling {name} ...")
        entry = measure_compile(row["model"], row["batch"], row["precision"], data, device, args, sampler, deadline)
        row["baselines"]["compile"] = entry
        summarise(row)
        if rate(entry):
            log(f"# compile {name}: {rate(entry):,.0f} samples/s ({entry['compile_mode']}; compile "
                f"{entry['compile_seconds']} s, excluded)")
        else:
            log(f"# compile {name}: {entry.get('error')}")
        write_json(args.json, report)

    for row in rows:
        for kind, entry in list(row["det"].items()) + list(row["baselines"].items()):
            if entry.get("skipped") == "deadline":
                report["skipped"].append(f"{kind} {row['model']}:{row['batch']}:{row['precision']}: deadline")
    report["total_seconds"] = round(deadline.elapsed(), 1)
    write_json(args.json, report)

    log("")
    log(f"## det vs PyTorch loops, samples/s ({report['environment'].get('gpu', device)}, "
        f"torch {torch.__version__}, {report['total_seconds']} s in all)")
    log("")
    log(TABLE_HEADER)
    for row in rows:
        log(table_row(row))
    log("")
    notes = report["notes"] + [n for row in rows for n in row_notes(row)]
    if notes:
        log("Notes:")
        for note in notes:
            log(f"- {note}")
    compile_skips = sorted(set(report["skipped"]))
    if compile_skips:
        log("Skipped:")
        for s in compile_skips:
            log(f"- {s}")
    if args.json:
        log(f"Full results: {args.json}")
    measured = any(rate(entry) for row in rows for entry in list(row["det"].values()) + list(row["baselines"].values()))
    return 0 if measured else 1  # 1: not one measurement succeeded


if __name__ == "__main__":
    sys.exit(main())

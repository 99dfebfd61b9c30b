#!/usr/bin/env python3
"""GPT-2 training throughput and MFU: det's builtin:gpt beside nanoGPT-shaped PyTorch, one GPU.

What it measures: tokens/s (steady state, after a warm-up of --warmup steps) and model FLOPs
utilisation of one training configuration (default GPT-2 small: 12 layers, 12 heads, 768 wide,
block 1024, batch 16, vocab 50304, on random tokens), trained by
  - eager:    the PyTorch model below, bf16 autocast, AdamW(fused=True);
  - compile:  the same with the model under torch.compile (default mode), as nanoGPT does; the
              compile time (the first step) is reported on its own, not in tokens/s;
  - det:      det-trial-bench --trial gpt --profiling (det's C++ loop and model) as a subprocess,
              whose last stdout line is a JSON object with tokens_per_second (the median of its
              report periods after the first) and mfu (may be null).
The model is nanoGPT's: token + position embeddings, n_layer pre-LayerNorm blocks (causal
self-attention through F.scaled_dot_product_attention(is_causal=True), a 4x GELU MLP), a final
LayerNorm, lm_head tied to the token embedding, bias on, dropout 0. AdamW lr 6e-4, betas
(0.9, 0.95), weight decay 0.1 on the matrices (nanoGPT's groups). No gradient clipping unless
--grad-clip (nanoGPT's train.py clips at 1.0).

MFU as nanoGPT's estimate_mfu: flops per token = 6 N + 12 n_layer n_head head_dim block_size, N
= all parameters but the position embedding; MFU = tokens/s * flops per token / peak, peak the
device's dense bf16 FLOP/s (det's table: H100 and H200 989 TFLOP/s, H100 PCIe 756, A100 312, ...)
or --peak-tflops. The same formula is applied to det's tokens/s (det's own mfu is kept beside
it). det's run differs in its learning-rate schedule (warm-up, cosine decay), which costs nothing.

Order: eager, det, compile (compiling is the least predictable part). After --deadline seconds
nothing new starts. Results go to stdout as a Markdown table and, rewritten after each system,
to --json PATH.

Run on a CUDA machine (det-trial-bench from DET_HOME/lib/det unless --det-bench names it):
  PYTHONUNBUFFERED=1 python3 bench/gpt_bench.py --json gpt_bench.json
Quick check without a GPU or det:
  python3 bench/gpt_bench.py --device cpu --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 \\
      --batch 4 --vocab 256 --seconds 1 --no-det
"""

import argparse
import math
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from gpu_bench_common import (add_det_path_arguments, compact_json, environment, log, read_det_result,
                              release_memory, resolve_det_path, resolve_device, synchronize, timed_steps,
                              warn, write_json)

# Dense bf16 peak FLOP/s by a substring of the CUDA device name, first match wins: det's table
# (gpu/gpt_settings.cpp peak_bf16_flops), so that both sides divide by the same peak.
PEAK_BF16_FLOPS = (
    ("GH200", 989e12), ("H200", 989e12), ("H100 NVL", 835e12), ("H100 PCIe", 756e12), ("H100", 989e12),
    ("H800", 989e12), ("B200", 2250e12), ("A100", 312e12), ("A800", 312e12), ("A6000", 155e12),
    ("L40S", 362e12), ("L40", 181e12), ("L4", 121e12), ("RTX 4090", 165e12))
LOSS_READ_EVERY = 10  # the PyTorch loops read the loss this often (det: --report-every)
SYSTEMS = ("eager", "det", "compile")


# ----------------------------------------------------------------------------------------------
# The model: nanoGPT's model.py, bias on, dropout 0.


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.flash = hasattr(F, "scaled_dot_product_attention")
        if not self.flash:  # torch < 2: masked softmax attention
            mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
            self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Mlp(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = Mlp(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, vocab, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self):
        """nanoGPT's get_num_params(non_embedding=True): all parameters (the tied lm_head once)
        but the position embedding."""
        return sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()

    def forward(self, idx, targets):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def make_optimizer(model, device):
    """nanoGPT's configure_optimizers: weight decay on tensors of 2+ dimensions only."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    kwargs = {"lr": 6e-4, "betas": (0.9, 0.95)}
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, fused=True, **kwargs), "AdamW(fused=True)"
        except (TypeError, RuntimeError) as e:
            warn(f"AdamW(fused=True) unavailable ({e}); using the default AdamW")
    return torch.optim.AdamW(groups, **kwargs), "AdamW"


# ----------------------------------------------------------------------------------------------
# Figures


def flops_per_token(args, n_params):
    head_dim = args.n_embd // args.n_head
    return 6 * n_params + 12 * args.n_layer * args.n_head * head_dim * args.block_size


def peak_flops(device, override_tflops):
    if override_tflops:
        return override_tflops * 1e12, f"--peak-tflops {override_tflops}"
    if device.type != "cuda":
        return None, "no peak for a CPU (use --peak-tflops)"
    name = torch.cuda.get_device_name(device)
    for key, flops in PEAK_BF16_FLOPS:
        if key in name:
            return flops, f"{name}: {flops / 1e12:.0f} TFLOP/s dense bf16"
    return None, f"{name}: not in the peak table (use --peak-tflops)"


def mfu(tokens_per_second, flops_token, peak):
    if not tokens_per_second or not peak:
        return None
    return tokens_per_second * flops_token / peak


# ----------------------------------------------------------------------------------------------
# The PyTorch loops


def random_token_batches(args, device, count=4):
    """A few batches of random tokens made once on the device and cycled: inputs and the next
    tokens as targets."""
    generator = torch.Generator(device="cpu").manual_seed(1234)
    batches = []
    for _ in range(count):
        tokens = torch.randint(args.vocab, (args.batch, args.block_size + 1), generator=generator)
        tokens = tokens.to(device)
        batches.append((tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()))
    return batches


class TrainLoop:
    """One model, optimizer and data; step() trains one batch."""

    def __init__(self, args, device, compiled):
        torch.manual_seed(0)
        self.raw_model = Gpt(args.vocab, args.block_size, args.n_layer, args.n_head, args.n_embd).to(device)
        self.n_params = self.raw_model.num_params()
        self.model = torch.compile(self.raw_model) if compiled else self.raw_model
        self.optimizer, self.optimizer_name = make_optimizer(self.raw_model, device)
        self.batches = random_token_batches(args, device)
        self.device, self.grad_clip = device, args.grad_clip
        self.bf16 = device.type == "cuda"
        self.steps, self.loss_sum, self.last_loss = 0, torch.zeros((), device=device), None

    def step(self):
        inputs, targets = self.batches[self.steps % len(self.batches)]
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.model(inputs, targets)
        loss.backward()
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.raw_model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.loss_sum += loss.detach()
        self.steps += 1
        if self.steps % LOSS_READ_EVERY == 0:
            self.last_loss = self.loss_sum.item() / LOSS_READ_EVERY
            self.loss_sum.zero_()


def measure_pytorch(system, args, device, tokens_per_step, flops_token, peak):
    """Builds the loop, times its first step (compilation for `compile`), warms up, then steps for
    --seconds (at least --min-steps)."""
    loop = None
    try:
        loop = TrainLoop(args, device, compiled=(system == "compile"))
        synchronize(device)
        start = time.perf_counter()
        loop.step()
        synchronize(device)
        first_step_s = time.perf_counter() - start
        steps, elapsed = timed_steps(loop.step, device, args.warmup, args.min_steps, args.seconds)
        tps = steps * tokens_per_step / elapsed
        result = {"tokens_per_second": tps, "mfu": mfu(tps, flops_token, peak), "steps": steps,
                  "seconds": round(elapsed, 3), "step_ms": 1000 * elapsed / steps,
                  "first_step_seconds": round(first_step_s, 2), "last_loss": loop.last_loss,
                  "optimizer": loop.optimizer_name, "n_params": loop.n_params,
                  "attention": "scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention")
                  else "masked softmax (no SDPA in this torch)"}
        if system == "compile":
            result["compile_seconds"] = result["first_step_seconds"]
        if device.type == "cuda":
            result["max_memory_gb"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        return result
    except Exception as e:
        return {"tokens_per_second": None, "error": f"{type(e).__name__}: {e}"[:1500]}
    finally:
        del loop
        if system == "compile":
            try:
                torch._dynamo.reset()
            except Exception:
                pass
        release_memory(device, reset_peak_memory_stats=True)


# ----------------------------------------------------------------------------------------------
# det's side


def run_det(det_path, args, plan, timeout):
    """det-trial-bench --trial gpt (`plan`: its batches and report period); its last stdout line
    is a JSON object."""
    batches, report_every = plan
    hparams = {"global_batch_size": args.batch, "n_layer": args.n_layer, "n_head": args.n_head,
               "n_embd": args.n_embd, "block_size": args.block_size, "vocab_size": args.vocab, "dropout": 0}
    cmd = [det_path, "--trial", "gpt", "--hparams", compact_json(hparams),
           "--data", compact_json({"dataset": "synthetic_tokens"}), "--batches", str(batches),
           "--mixed-precision", "O1", "--report-every", str(report_every)]
    if args.det_profiling:
        cmd.append("--profiling")
    entry = {"command": cmd, "tokens_per_second": None}
    start = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as stdout, tempfile.TemporaryFile(mode="w+") as stderr:
        try:
            entry["exit_code"] = subprocess.run(cmd, stdout=stdout, stderr=stderr, text=True,
                                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            entry["exit_code"], entry["error"] = None, f"timed out after {timeout:.0f} s"
        except OSError as e:
            entry["error"] = f"could not start: {e}"
            return entry
        stdout.seek(0)
        stderr.seek(0)
        lines = [line for line in stdout.read().splitlines() if line.strip()]
        stderr_tail = stderr.read()[-1500:]
    entry["wall_seconds"] = round(time.perf_counter() - start, 2)
    if read_det_result(entry, lines, "tokens_per_second", stderr_tail):
        entry["det_mfu"] = entry["result"].get("mfu")
        loss = entry["result"].get("loss")
        entry["last_loss"] = loss if isinstance(loss, (int, float)) else None
    return entry


# ----------------------------------------------------------------------------------------------
# Report


def fmt(value, spec, missing="—"):
    return missing if value is None else format(value, spec)


def table(results):
    lines = ["| system | tokens/s | MFU % | ms/step | compile s | last loss | note |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for system, r in results.items():
        if r.get("skipped"):
            note = f"skipped: {r['skipped']}"
        elif r.get("error"):
            note = f"error: {r['error'][:200]}"
        else:
            note = r.get("note", "")
        step_ms = r.get("step_ms")
        mfu_cell = fmt(r.get("mfu") and 100 * r["mfu"], ".1f")
        lines.append(f"| {system} | {fmt(r.get('tokens_per_second'), ',.0f')} | {mfu_cell} | {fmt(step_ms, '.1f')} "
                     f"| {fmt(r.get('compile_seconds'), '.1f')} | {fmt(r.get('last_loss'), '.3f')} | {note} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Main


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--n-layer", type=int, default=12)
    p.add_argument("--n-head", type=int, default=12)
    p.add_argument("--n-embd", type=int, default=768)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seconds", type=float, default=10.0, help="timed wall time per system")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps after the first one")
    p.add_argument("--min-steps", type=int, default=3, help="timed steps at least")
    p.add_argument("--grad-clip", type=float, default=0.0, help="clip the gradient norm (0: off)")
    p.add_argument("--peak-tflops", type=float, default=None, help="peak dense bf16 TFLOP/s for MFU")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of eager, det, compile")
    p.add_argument("--deadline", type=float, default=240.0,
                   help="seconds after start past which no system starts")
    p.add_argument("--compile-min-left", type=float, default=60.0,
                   help="start compile only with this many seconds left before the deadline")
    add_det_path_arguments(p)
    p.add_argument("--no-det-profiling", dest="det_profiling", action="store_false",
                   help="run det-trial-bench without --profiling")
    p.add_argument("--det-timeout", type=float, default=240.0, help="seconds the det run may take")
    p.add_argument("--json", default=None, help="write all results as JSON to this path")
    args = p.parse_args()
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in args.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s}")
    if args.n_embd % args.n_head:
        p.error("--n-embd must be a multiple of --n-head")
    return args


def det_plan_for(results, args, tokens_per_step):
    """det's --batches and --report-every: about --seconds of steps at the eager loop's rate (60
    steps without one), in at least 5 report periods after a first one (det-trial-bench reports
    the median of the periods' rates after the first, which holds the start-up); periods of at
    most LOSS_READ_EVERY steps, as the PyTorch loops read their loss."""
    eager_tps = results.get("eager", {}).get("tokens_per_second")
    timed = math.ceil(args.seconds * eager_tps / tokens_per_step) if eager_tps else 60
    timed = max(args.min_steps, timed)
    report_every = min(LOSS_READ_EVERY, max(1, math.ceil(timed / 5)))
    periods = max(5, math.ceil(timed / report_every)) + 1
    return report_every * periods, report_every


def main():
    args = parse_args()
    started = time.perf_counter()
    left = lambda: args.deadline - (time.perf_counter() - started)  # noqa: E731
    device = resolve_device(args.device)
    det_path, det_note = resolve_det_path(args)
    tokens_per_step = args.batch * args.block_size
    peak, peak_note = peak_flops(device, args.peak_tflops)

    # Parameter count from a model on the meta device where possible (nothing allocated).
    try:
        with torch.device("meta"):
            n_params = Gpt(args.vocab, args.block_size, args.n_layer, args.n_head, args.n_embd).num_params()
    except Exception:
        n_params = Gpt(args.vocab, args.block_size, args.n_layer, args.n_head, args.n_embd).num_params()
    flops_token = flops_per_token(args, n_params)

    report = {"environment": environment(device), "args": vars(args), "n_params": n_params,
              "flops_per_token": flops_token, "peak_flops": peak, "peak_note": peak_note,
              "tokens_per_step": tokens_per_step, "results": {}, "notes": []}
    results = report["results"]
    log(f"# GPT: {args.n_layer} layers, {args.n_head} heads, {args.n_embd} wide, block {args.block_size}, "
        f"batch {args.batch}, vocab {args.vocab}: {n_params / 1e6:.1f} M parameters (no wpe), "
        f"{flops_token / 1e6:.0f} MFLOP/token; peak {peak_note}")
    log(f"# {report['environment'].get('gpu', device)}, torch {torch.__version__}; each system: first step, "
        f"{args.warmup} warm-up steps, then >= {args.seconds} s; deadline {args.deadline:.0f} s")
    if device.type != "cuda":
        report["notes"].append("not on CUDA: fp32, no autocast, no fused AdamW")
    if det_note:
        report["notes"].append(det_note)
    for note in report["notes"]:
        log(f"# {note}")

    for system in SYSTEMS:
        if system not in args.systems:
            continue
        if system == "det" and not det_path:
            results["det"] = {"skipped": det_note}
            continue
        if system == "compile" and not hasattr(torch, "compile"):
            results["compile"] = {"skipped": f"torch {torch.__version__} has no torch.compile"}
            log(f"# compile: {results['compile']['skipped']}")
            continue
        needed = args.compile_min_left if system == "compile" else args.seconds + 10
        if left() < needed:
            results[system] = {"skipped": f"deadline ({left():.0f} s left, {needed:.0f} s needed)"}
            log(f"# {system}: {results[system]['skipped']}")
            continue
        log(f"# {system} ...")
        if system == "det":
            plan = det_plan_for(results, args, tokens_per_step)
            entry = run_det(det_path, args, plan, timeout=min(args.det_timeout, max(30.0, left() + 30)))
            entry["mfu"] = mfu(entry.get("tokens_per_second"), flops_token, peak)
            if entry.get("tokens_per_second"):
                entry["note"] = f"det's own mfu: {fmt(entry.get('det_mfu'), '.3f', 'null')}"
                entry["step_ms"] = 1000 * tokens_per_step / entry["tokens_per_second"]
        else:
            entry = measure_pytorch(system, args, device, tokens_per_step, flops_token, peak)
            if entry.get("tokens_per_second"):
                entry["note"] = entry["optimizer"] + (f", peak memory {entry['max_memory_gb']} GB"
                                                      if "max_memory_gb" in entry else "")
        results[system] = entry
        if entry.get("tokens_per_second"):
            log(f"# {system}: {entry['tokens_per_second']:,.0f} tokens/s, MFU "
                f"{fmt(entry.get('mfu') and 100 * entry['mfu'], '.1f')} %"
                + (f", compile {entry['compile_seconds']} s" if entry.get("compile_seconds") is not None else ""))
        else:
            log(f"# {system}: {entry.get('error')}")
        write_json(args.json, report)

    pytorch_rates = [(r.get("tokens_per_second"), s) for s, r in results.items() if s != "det" and r.get("tokens_per_second")]
    best = max(pytorch_rates) if pytorch_rates else None
    det_tps = results.get("det", {}).get("tokens_per_second")
    if det_tps and best:
        report["det_over_best_pytorch"] = det_tps / best[0]
        report["notes"].append(f"det / best PyTorch ({best[1]}): {det_tps / best[0]:.2f}")
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.json, report)

    log("")
    log(f"## GPT training, {report['environment'].get('gpu', device)}, torch {torch.__version__} "
        f"({report['total_seconds']} s in all)")
    log("")
    log(table(results))
    log("")
    for note in report["notes"]:
        log(f"- {note}")
    for system, r in results.items():
        if r.get("error") and r.get("stderr_tail"):
            log(f"- {system} stderr tail: {r['stderr_tail'][-500:]!r}")
    if args.json:
        log(f"Full results: {args.json}")
    return 0 if any(r.get("tokens_per_second") for r in results.values()) else 1  # 1: nothing measured


if __name__ == "__main__":
    sys.exit(main())

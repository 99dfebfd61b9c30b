#!/bin/sh
# A short second pass on a CUDA machine after scripts/gpu-check.sh: builds the torch trials from
# the archive, then measures what the first pass left open, each in one run beside its baseline:
# builtin:gpt without dropout kernels beside PyTorch eager; cnn at batch 4096 (float32 in the
# default layout) beside the PyTorch loops; and the steady GPU utilisation of det's loop at batch
# 512 from the trial's own NVML sampler, over runs long enough for several samples.
#   bench/gpu_followup.sh ARCHIVE OUT_DIR
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/det-followup.XXXXXX)
tar -xzf "$1" -C "$work"
home=$(ls -d "$work"/det-*/ | head -n 1)
out=$2
"$home/scripts/build-torch-trials.sh" --torch-from-python >"$out/followup-build.log" 2>&1
bench="$home/lib/det/det-trial-bench"
export PYTHONUNBUFFERED=1
python3 "$here/bench/gpt_bench.py" --det-bench "$bench" --systems eager,det --seconds 6 --json "$out/gpt2.json" --deadline 120
python3 "$here/bench/gpu_harness_bench.py" --det-bench "$bench" --models cnn --batches 4096 --precisions fp32,bf16 \
  --compile-configs none --seconds 2 --json "$out/cnn4096.json" --deadline 90
for spec in "cnn 512 O0 12000" "cnn 512 O1 12000" "mlp 512 O0 40000" "mlp 512 O1 40000"; do
  set -- $spec
  echo "== utilisation: $1 batch $2 $3, $4 batches, CUDA graph"
  "$bench" --trial "$1" --hparams "{\"global_batch_size\":$2}" \
    --data '{"dataset":"synthetic","synthetic_train_size":60000,"synthetic_val_size":1000}' \
    --batches "$4" --report-every 500 --mixed-precision "$3" --cuda-graph --profiling 2>/dev/null | tail -n 1
done

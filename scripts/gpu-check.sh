#!/bin/sh
# det's whole cluster on a CUDA machine (root, one GPU, PyTorch in python3, no package registry),
# in one run of under 8 minutes that prints one table (scripts/gpu_check.py does the work):
#   scripts/gpu-check.sh [ARCHIVE] [OUT_DIR]
# ARCHIVE: det-VERSION-linux-x86_64.tar.gz (scripts/package.sh), unpacked into a fresh directory;
# default: the newest one under dist/ or build/ of this checkout. Run from an unpacked archive's
# scripts/, it uses that archive. OUT_DIR (default $OUT, else ./gpu-check-out) receives the table
# (gpu-check.md), the log and the benches' JSON.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-${OUT:-$PWD/gpu-check-out}}
mkdir -p "$out"
if [ -x "$here/bin/det-node" ]; then
  det_home="$here"
else
  archive=${1:-$(ls -t "$here"/dist/det-*-linux-x86_64.tar.gz "$here"/build/det-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)}
  [ -f "$archive" ] || { echo "gpu-check: no archive (make one with scripts/package.sh, or name it)" >&2; exit 2; }
  work=$(mktemp -d /tmp/det-gpu-check.XXXXXX)
  chmod 755 "$work"  # PostgreSQL runs as the postgres user and must reach its data directory
  tar -xzf "$archive" -C "$work"
  det_home=$(ls -d "$work"/det-*/ | head -n 1)
fi
export PYTHONUNBUFFERED=1
exec python3 "$here/scripts/gpu_check.py" --det-home "$det_home" --repo "$here" --out "$out" ${DET_GPU_CHECK_ARGS:-}

#!/bin/sh
# Part of scripts/package.sh: what a GPU node needs, beside the release, to build det's torch
# trials against its own LibTorch:
#   scripts/package-sources.sh REPO_ROOT STAGE
# copies every path scripts/torch-trials-sources.txt lists into STAGE/src/ (a missing one is a
# warning: the list may name files still being written), /usr/include/nlohmann into
# STAGE/src/third_party/nlohmann (GPU nodes have no nlohmann-json), and the build script and the
# GPU check with what it runs, when present, at their paths below STAGE.
set -eu
ROOT=$1
STAGE=$2
LIST=$ROOT/scripts/torch-trials-sources.txt

die() { echo "det: $*" >&2; exit 1; }

[ -f "$LIST" ] || die "$LIST is missing: it lists the sources a release carries to build the torch trials."
mkdir -p "$STAGE/src/third_party"
entries=$(mktemp)
trap 'rm -f "$entries"' EXIT
trap 'exit 130' INT TERM
sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$LIST" >"$entries"
while IFS= read -r entry; do
  [ -n "$entry" ] || continue
  entry=${entry%/}
  case "/$entry/" in
    //* | */../* | */./*) die "$LIST names $entry: entries are paths inside the repository, without . or .. parts." ;;
  esac
  if [ ! -e "$ROOT/$entry" ]; then
    echo "det: warning: $LIST names $entry, which $ROOT does not have; the release goes without it." >&2
    continue
  fi
  mkdir -p "$STAGE/src/$(dirname "$entry")"
  cp -R "$ROOT/$entry" "$STAGE/src/$entry"
done <"$entries"

[ -f /usr/include/nlohmann/json.hpp ] ||
  die "/usr/include/nlohmann/json.hpp is missing: install nlohmann-json3-dev, which the torch trials' sources need."
cp -R /usr/include/nlohmann "$STAGE/src/third_party/nlohmann"

# gpu-check.sh, run from the unpacked archive, takes the archive as its checkout: what it runs
# (gpu_check.py, the cluster driver, the GPU benches, the Core API example) travels with it.
for f in scripts/build-torch-trials.sh scripts/gpu-check.sh scripts/gpu_check.py tests/integration/cluster.py \
         bench/gpu_harness_bench.py bench/gpt_bench.py bench/gpu_bench_common.py examples/pytorch-core-api/train.py; do
  if [ -f "$ROOT/$f" ]; then
    mkdir -p "$STAGE/$(dirname "$f")"
    cp "$ROOT/$f" "$STAGE/$f"
  fi
done

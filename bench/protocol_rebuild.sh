#!/bin/sh
# Issue 37's figure: what one change to an actor's protocol costs an incremental build. Adds a
# declaration to HEADER (so that ccache, which hashes preprocessed text, cannot serve it: a comment
# would not do), builds, counts the translation units compiled and the seconds, and puts the header
# back (the next build then hits ccache again).
#
#   bench/protocol_rebuild.sh [BUILD_DIR] [HEADER]     defaults: build, master/local_interfaces.hpp
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
HEADER=${2:-master/local_interfaces.hpp}
cd "$ROOT"
cmake --build "$BUILD" -j2 >/dev/null  # up to date first
cp "$HEADER" "$HEADER.bench-saved"
trap 'mv "$ROOT/$HEADER.bench-saved" "$ROOT/$HEADER"' EXIT
echo "namespace det { inline constexpr int protocol_rebuild_probe_$(date +%s) = 1; }" >> "$HEADER"
start=$(date +%s.%N)
cmake --build "$BUILD" -j2 > "$BUILD/protocol_rebuild.log" 2>&1
end=$(date +%s.%N)
units=$(grep -c "Building CXX" "$BUILD/protocol_rebuild.log" || true)
echo "touching $HEADER rebuilt $units translation units in $(awk "BEGIN { printf \"%.0f\", $end - $start }") s (-j2)"

#!/bin/sh
# Installs what is missing, builds, and runs every test (unit, PostgreSQL, cluster).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-tests
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900

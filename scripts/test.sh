#!/bin/sh
# Installs what is missing, builds, and runs every test (unit, PostgreSQL, cluster).
set -eu
cd "$(dirname "$0")/.."
# A root agent runs each user's work as that user's own Unix user, which must reach det-worker and
# the tests' files: the directories above the checkout (/root is 0700) get others' search bit, no more.
if [ "$(id -u)" = 0 ]; then
  dir=$(pwd -P)
  while [ "$dir" != / ]; do
    [ -n "$(find "$dir" -maxdepth 0 -perm -o+x)" ] || { echo "test.sh: letting task users traverse $dir (o+x)"; chmod o+x "$dir"; }
    dir=$(dirname "$dir")
  done
fi
scripts/install-deps.sh --with-tests
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900

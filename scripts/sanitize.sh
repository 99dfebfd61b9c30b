#!/bin/sh
# The test suite on det built with AddressSanitizer and UndefinedBehaviorSanitizer (GCC's, all of
# det's code; LibTorch, CAF and PostgreSQL as Debian built them), in build-asan/:
#   scripts/sanitize.sh              builds everything there and runs every test
#   scripts/sanitize.sh REGEX        only the tests whose names match (ctest -R), e.g. 'unit|actor'
# A report (a leak included) ends its process with an error, and so fails its test.
set -eu
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
[ -f build-asan/CMakeCache.txt ] ||
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDET_SANITIZE=address,undefined -DDET_WITH_CUDA=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1"
cd build-asan
ctest -j"$(nproc)" --output-on-failure -R "${1:-.}"

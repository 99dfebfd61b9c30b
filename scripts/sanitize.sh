#!/bin/sh
# The test suite on det built with AddressSanitizer and UndefinedBehaviorSanitizer (GCC's, all of
# det's code; LibTorch, CAF and PostgreSQL as Debian built them), in build-asan/:
#   scripts/sanitize.sh              builds everything there and runs every test
#   scripts/sanitize.sh REGEX        only the tests whose names match (ctest -R), e.g. 'unit|actor'
# Every report (leaks included) is written under build-asan/sanitizer-reports/ and fails the run,
# but for one that is CAF's: CAF 0.17 starts an actor whose function takes no arguments besides
# self by binding a reference to an empty std::shared_ptr<std::tuple<>> (its
# caf/detail/init_fun_factory.hpp), which UBSan reports and GCC's runtime cannot suppress.
set -eu
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
[ -f build-asan/CMakeCache.txt ] ||
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDET_SANITIZE=address,undefined -DDET_WITH_CUDA=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
reports=$PWD/build-asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan"
status=0
(cd build-asan && ctest -j"$(nproc)" --output-on-failure -R "${1:-.}") || status=$?
# A UBSan report is its "runtime error" line and its stack; CAF's is the one whose first frames
# name init_fun_factory.
found=$(cat "$reports"/* 2>/dev/null | awk '
  /runtime error:/ { if (pending) print pending; pending = $0; frames = 0; next }
  pending && /^ +#[0-9]/ { if ($0 ~ /init_fun_factory/) pending = ""; if (++frames == 3 && pending) { print pending; pending = "" } next }
  /ERROR: (AddressSanitizer|LeakSanitizer)/ { print }
  END { if (pending) print pending }')
if [ -n "$found" ]; then
  echo "sanitizer reports (in $reports):" >&2
  echo "$found" | sort | uniq -c >&2
  exit 1
fi
exit "$status"

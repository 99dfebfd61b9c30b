#!/bin/sh
# Runs one libFuzzer target of fuzz/ for SECONDS under ASan and UBSan:
#   scripts/fuzz.sh TARGET SECONDS      e.g. scripts/fuzz.sh fuzz_experiment_config 600
#   scripts/fuzz.sh --build             configures and builds them all (clang-14) in build-fuzz/
#   scripts/fuzz.sh --list              names the targets
# The corpus grows in build-fuzz/corpus/TARGET, seeded from the test configs and examples; a crash,
# leak or sanitizer report ends the run with a non-zero status and leaves its input in build-fuzz/.
set -eu
cd "$(dirname "$0")/.."
TARGETS="fuzz_experiment_config fuzz_master_config fuzz_yaml_config fuzz_yaml_scalar fuzz_task_config fuzz_rest_bodies fuzz_custom_search fuzz_grid_count fuzz_model_archive fuzz_checkpoint_metadata fuzz_caf_messages"

build() {
  mkdir -p build-fuzz
  # One build at a time: the test suite starts several targets at once.
  exec 9>build-fuzz/.lock
  flock 9
  [ -f build-fuzz/CMakeCache.txt ] ||
    cmake -S fuzz -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
  cmake --build build-fuzz -j"$(nproc)" "$@" >/dev/null
  flock -u 9
}

case "${1:-}" in
  --build) build; exit 0 ;;
  --list) echo "$TARGETS"; exit 0 ;;
  "") echo "usage: scripts/fuzz.sh TARGET SECONDS | --build | --list" >&2; exit 2 ;;
esac
target=$1
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
case " $TARGETS " in *" $target "*) ;; *) echo "scripts/fuzz.sh: no target $target; the targets: $TARGETS" >&2; exit 2 ;; esac
build --target "$target"

corpus=build-fuzz/corpus/$target
mkdir -p "$corpus"
seed() {  # seed PREFIX FILES...: each file, after PREFIX (the targets that read a selector byte first)
  prefix=$1; shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    name=$corpus/seed-$(basename "$f")
    [ -f "$name" ] || { printf "$prefix"; cat "$f"; } >"$name"
  done
}
# Inputs that once found a bug (fuzz/regressions/NAME-*, NAME the target without fuzz_) run first.
for f in fuzz/regressions/"${target#fuzz_}"-*; do
  [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
done
tomls=$(find tests/data/configs examples -name '*.toml' -not -path '*/build/*')
case $target in
  fuzz_experiment_config) seed "" $tomls ;;
  fuzz_master_config) seed "" tests/data/configs/master.toml tests/data/configs/bad_master.toml ;;
  fuzz_yaml_config) seed "" $(find tests/data/configs -name '*.yaml') ;;
  fuzz_yaml_scalar) for v in 0 -12 0x1F 1_000 .5e-3 -.inf .NaN yes Off '~' '"3"' 1e400; do
      printf '%s' "$v" >"$corpus/seed-$(printf '%s' "$v" | od -An -tx1 | tr -d ' \n')"
    done ;;
  fuzz_task_config) seed '\000' $tomls ;;
  fuzz_rest_bodies) printf '\000{"config": "name = \\"x\\"", "config_path": "x.toml"}' >"$corpus/seed-create" ;;
  fuzz_custom_search)
    printf '%s\n' 'p{"searcher_operations": [{"create_trial": {"request_id": "a", "hyperparams": "{}"}}], "triggered_by_event": {"id": 1}}' \
      'c 1' 'p{"searcher_operations": [{"trial_operation": {"validate_after": {"request_id": "a", "length": 10}}}], "triggered_by_event": {"id": 2}}' \
      'v 1 0.5 10' 's' 'p{"searcher_operations": [{"close_trial": {"request_id": "a"}}, {"shut_down": {}}], "triggered_by_event": {"id": 3}}' \
      'x 1' >"$corpus/seed-search" ;;
  fuzz_grid_count) printf '\001\020\000\000\000\000\000\000\000\000\003\000\000\000\000\000\000\000' >"$corpus/seed-two-axes" ;;
  fuzz_model_archive)  # each example's directory, as det submit packs it, and gzip-compressed
    for d in examples/*/; do
      name=$corpus/seed-$(basename "$d")
      [ -f "$name.tar" ] || tar -cf "$name.tar" -C "$d" .
      [ -f "$name.tar.gz" ] || gzip -c "$name.tar" >"$name.tar.gz"
    done ;;
  fuzz_checkpoint_metadata)
    printf '%s\n' '{"uuid": "0b7c2a34-8d0e-4f4e-9a0b-6c1d2e3f4a5b", "format": "det.mlp/1", "batches": 100,' \
      '"records": 3200, "epochs": 0.5, "files": {"model.pt": 1024}}' >"$corpus/seed-metadata" ;;
  fuzz_caf_messages) build --target caf_message_seeds && build-fuzz/caf_message_seeds "$corpus" ;;
esac

# The archive and checkpoint targets write a directory per input: on tmpfs when there is one.
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
cd build-fuzz
log=$target.log
status=0
"./$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$target-" "corpus/$target" >"$log" 2>&1 || status=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
echo "$target: $execs executions in $seconds s, $coverage, corpus $(ls "corpus/$target" | wc -l) inputs"
if [ "$status" -ne 0 ]; then
  grep -m1 -A30 'ERROR\|runtime error\|==[0-9]*==' "$log" >&2 || tail -40 "$log" >&2
  exit "$status"
fi

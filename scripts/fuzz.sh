#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer, bounded in time: builds the fuzz targets of tests/fuzz
# with clang-14 (address and undefined-behaviour sanitizers) in build-fuzz/, then runs each for
# FUZZ_SECONDS (default 20) on a copy of its seed corpus tests/fuzz/corpus/<target>/, two at a
# time. Fails when a target crashes, leaks, runs out of memory (1 GB) or takes over 5 s on one
# input; the reproducer and the log are kept in build-fuzz/findings/<target>/.
#
# New corpus entries found during a run go to a temporary folder: the checked-in corpus is never
# written to. Environment: FUZZ_SECONDS, FUZZ_TARGETS (space-separated subset), FUZZ_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR="$ROOT/build-fuzz"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
FUZZ_JOBS="${FUZZ_JOBS:-2}"
read -r -a TARGETS <<<"${FUZZ_TARGETS:-json_reader_fuzz skill_md_fuzz zip_reader_fuzz http_request_fuzz}"

for tool in clang-14 clang++-14; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fuzz: $tool is missing (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)" >&2
    exit 1
  fi
done

start=$(date +%s)
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENGRAM_FUZZ=ON >/dev/null
fi
# Only the fuzz binaries and the few sources they compile (tests/fuzz/CMakeLists.txt).
cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -j 2
built=$(date +%s)
echo "fuzz: built ${TARGETS[*]} in $((built - start)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one target; its exit status is libFuzzer's (0 when the time ran out without a finding).
run_target() {
  local target=$1 dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -R "tests/fuzz/corpus/$target/." "$dir/corpus/"
  # libFuzzer adds what it finds to the corpus folder it is given: the copy, never the repo.
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$BUILD_DIR/tests/fuzz/$target" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=1024 \
    -timeout=5 -max_len=65536 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1
}

failed=()
pids=()
names=()
wait_one() {
  local pid=${pids[0]} target=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if wait "$pid"; then
    echo "fuzz: $target: $(grep -E '^stat::number_of_executed_units' "$work/$target/log" |
      awk '{print $2}') runs, no finding"
  else
    failed+=("$target")
    mkdir -p "$BUILD_DIR/findings/$target"
    cp -R "$work/$target/artifacts/." "$work/$target/log" "$BUILD_DIR/findings/$target/" || true
    echo "fuzz: $target FAILED; last lines of its log (all in build-fuzz/findings/$target/log):"
    tail -40 "$work/$target/log"
  fi
}
for target in "${TARGETS[@]}"; do
  run_target "$target" &
  pids+=("$!")
  names+=("$target")
  if [ "${#pids[@]}" -ge "$FUZZ_JOBS" ]; then wait_one; fi
done
while [ "${#pids[@]}" -gt 0 ]; do wait_one; done

echo "fuzz: done in $(($(date +%s) - start)) s"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi

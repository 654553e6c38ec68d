#!/usr/bin/env bash
# Sanitizer runs of the unit tests of the layers where threads meet, built with clang-14, and of the
# HTTP integration tests against a server built the same way:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
#   tsan  ThreadSanitizer, in build-tsan/
# Usage: scripts/sanitize.sh [asan] [tsan]   (both when none is named)
#
# A sanitizer build compiles every library a test binary links, at two to five times the cost of
# the release build, so CI runs a subset within its time: the binaries named below (what they
# cover is in CONTRIBUTING.md). The store tests run against PostgreSQL too when the
# ENGRAM_TEST_PG_* environment of scripts/pg_test_cluster.sh is set. Fails on the first test
# failure or sanitizer report; the full report is in build-<kind>/sanitize-<binary>.log.
#
# Environment: ASAN_TARGETS, TSAN_TARGETS (space-separated test binaries), JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
read -r -a ASAN_BINARIES <<<"${ASAN_TARGETS:-common_test store_test server_test core_test shard_budget_test integration_test}"
read -r -a TSAN_BINARIES <<<"${TSAN_TARGETS:-store_test server_test core_test shard_budget_test}"
kinds=("$@")
if [ ${#kinds[@]} -eq 0 ]; then kinds=(asan tsan); fi

for tool in clang-14 clang++-14; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "sanitize: $tool is missing (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)" >&2
    exit 1
  fi
done

# Reports name the source line; suppressions list only what lies outside Engram's code.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/sanitizers/tsan.supp}"

# run_kind KIND FLAGS BINARY...: configures build-KIND once, builds the binaries, runs each.
run_kind() {
  local kind=$1 flags=$2
  shift 2
  local dir="$ROOT/build-$kind" start
  start=$(date +%s)
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    # -O1 keeps the runs fast enough; frame pointers keep the reports' stacks whole.
    CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DENGRAM_BUILD_BENCHMARKS=OFF \
      "-DCMAKE_CXX_FLAGS=-O1 -g -fno-omit-frame-pointer $flags" \
      "-DCMAKE_EXE_LINKER_FLAGS=$flags" >/dev/null
  fi
  local targets=("$@")
  # The integration tests drive a server process: the sanitized binary of this build.
  if [[ " $* " == *" integration_test "* ]]; then targets+=(engram); fi
  cmake --build "$dir" -j "${JOBS:-2}" --target "${targets[@]}"
  echo "sanitize: $kind built $* in $(($(date +%s) - start)) s"
  local binary path log
  for binary in "$@"; do
    path=$(find "$dir/src" "$dir/tests" -type f -name "$binary" -perm -u+x | head -1)
    log="$dir/sanitize-$binary.log"
    start=$(date +%s)
    if ! "$path" --gtest_brief=1 >"$log" 2>&1; then
      tail -n 80 "$log" >&2
      echo "sanitize: $kind $binary FAILED (full log: $log)" >&2
      return 1
    fi
    echo "sanitize: $kind $binary passed in $(($(date +%s) - start)) s"
  done
}

for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) run_kind asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
      "${ASAN_BINARIES[@]}" ;;
    tsan) run_kind tsan "-fsanitize=thread" "${TSAN_BINARIES[@]}" ;;
    *)
      echo "sanitize: unknown kind '$kind' (asan, tsan)" >&2
      exit 2
      ;;
  esac
done

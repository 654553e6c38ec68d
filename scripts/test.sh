#!/usr/bin/env bash
# Installs, builds and runs every test: a short libFuzzer run of the parsers (scripts/fuzz.sh),
# the Debian package built, installed and served from (scripts/package.sh --smoke, as root), the
# unit tests of the layers where threads meet under AddressSanitizer + UBSan and ThreadSanitizer and
# the HTTP integration tests under AddressSanitizer + UBSan (scripts/sanitize.sh), then the unit,
# property and HTTP integration tests with ctest; both store
# backends (a throw-away PostgreSQL cluster is started for the run and removed after it,
# scripts/pg_test_cluster.sh). ctest runs last, so its summary closes the output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# Every relative link of the docs resolves; every C++ file is formatted as .clang-format says;
# clang's thread-safety analysis accepts every source (src/common/mutex.h).
bash scripts/check_docs.sh
bash scripts/check_format.sh
bash scripts/check_thread_safety.sh
# Coverage-guided fuzzing of the parsers, bounded in time (FUZZ_SECONDS per target).
bash scripts/fuzz.sh
bash scripts/package.sh --smoke
eval "$(bash scripts/pg_test_cluster.sh start)"
ROOT=$(pwd)
trap 'bash "$ROOT/scripts/pg_test_cluster.sh" stop "$ENGRAM_TEST_PG_DIR"' EXIT
bash scripts/sanitize.sh
cd build
ctest --output-on-failure --timeout 600 -j "${JOBS:-2}"

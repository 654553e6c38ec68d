#!/usr/bin/env bash
# Installs, builds and runs every test (unit, property and HTTP integration tests) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 600 -j "${JOBS:-2}"

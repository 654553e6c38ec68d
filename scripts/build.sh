#!/usr/bin/env bash
# Installs dependencies (scripts/setup.sh) and builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
# Two cores, and some translation units (Boost.Beast) need ~1 GB each: two jobs at most.
cmake --build build -j "${JOBS:-2}"

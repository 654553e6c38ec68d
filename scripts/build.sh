#!/usr/bin/env bash
# Installs dependencies (scripts/setup.sh) and builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
# CI builds with warnings as errors (GCC 12 as Debian ships it; a local build only warns).
WERROR=OFF
if [ "${CI:-}" = "true" ]; then WERROR=ON; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DENGRAM_WERROR="$WERROR" >/dev/null
# Two cores, and some translation units (Boost.Beast) need ~1 GB each: two jobs at most.
cmake --build build -j "${JOBS:-2}"

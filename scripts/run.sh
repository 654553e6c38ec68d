#!/usr/bin/env bash
# Installs, builds and runs the server on the embedded default data directory (./data).
# Extra arguments go to `engram serve`, e.g. scripts/run.sh --listen 127.0.0.1:9000
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/engram serve --data-dir "${ENGRAM_DATA_DIR:-data}" "$@"

#!/usr/bin/env bash
# Reproduces the retrieval-quality tables of docs/benchmarks.md in one command:
#   bench/quality.sh [locomo|longmemeval|memgallery ...]     (default: locomo longmemeval)
# For each dataset: one data directory is filled once through the HTTP API (default server), the
# vector queue is allowed to drain, then the same data is searched by servers started in each
# retrieval mode — adds are re-sent with the same request_ids, which the server answers from its
# idempotency records without storing anything. FTS5 runs in the fill pass on the same turns.
# Results: bench/results/<dataset>_<label>.json and one table on stdout.
# Env: LIMIT (first N conversations/questions), ENGRAM (binary, default build/engram),
#      MODES (space-separated label[:flag,flag...], default "bm25:--retrieval=bm25
#      vector:--retrieval=vector hybrid").
set -euo pipefail
cd "$(dirname "$0")/.."
ENGRAM="${ENGRAM:-build/engram}"
OUT=bench/results
mkdir -p "$OUT"
datasets=("$@")
[ ${#datasets[@]} -eq 0 ] && datasets=(locomo longmemeval)
read -r -a modes <<<"${MODES:-bm25:--retrieval=bm25 vector:--retrieval=vector hybrid}"
limit_args=()
[ -n "${LIMIT:-}" ] && limit_args=(--limit "$LIMIT")

start_server() {  # data_dir, extra args...; sets PID and URL
  local dir=$1; shift
  "$ENGRAM" serve --listen 127.0.0.1:0 --data-dir "$dir" "$@" >"$dir.out" 2>"$dir.log" &
  PID=$!
  for _ in $(seq 1 300); do
    if grep -q "listening on" "$dir.out" 2>/dev/null; then break; fi
    sleep 0.1
  done
  URL="http://$(grep -o 'listening on [^ ]*' "$dir.out" | head -1 | cut -d' ' -f3)"
}
stop_server() { kill -TERM "$PID"; wait "$PID" || true; }
wait_vectors() {  # until the server's vector queue is empty
  for _ in $(seq 1 7200); do
    q=$(curl -s "$URL/metrics" | awk '/^engram_vector_queue /{print $2}')
    [ "${q:-1}" = "0" ] && return 0
    sleep 1
  done
}

for ds in "${datasets[@]}"; do
  # WORK=<dir> reuses (and keeps) a data directory filled by an earlier run with the same dataset
  # and LIMIT; the fill pass then only re-sends idempotent adds.
  work=${WORK:-$(mktemp -d)}
  run="quality-$ds"
  start_server "$work/data"
  python3 bench/replay.py --url "$URL" --dataset "$ds" --run-id "$run" --label fill "${limit_args[@]}" \
    --fts5 --json-out "$work/fill.json" >"$work/fill.txt"
  wait_vectors
  stop_server
  for spec in "${modes[@]}"; do
    label=${spec%%:*}
    flags=()
    if [[ "$spec" == *:* ]]; then IFS=',' read -r -a flags <<<"${spec#*:}"; fi
    start_server "$work/data" "${flags[@]}"
    wait_vectors
    python3 bench/replay.py --url "$URL" --dataset "$ds" --run-id "$run" --label "$label" \
      "${limit_args[@]}" --json-out "$OUT/${ds}_$label.json" >/dev/null
    stop_server
  done
  # The FTS5 row comes from the fill pass (same data, same questions).
  python3 - "$work/fill.json" "$OUT/${ds}_fts5.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
json.dump(dict(d, rows=[r for r in d["rows"] if r["system"] == "sqlite-fts5"]), open(sys.argv[2], "w"))
PY
  if [ -n "${KEEP:-}${WORK:-}" ]; then echo "kept $work/data"; else rm -rf "$work"; fi
done
for ds in "${datasets[@]}"; do python3 bench/compare.py "$OUT/${ds}"_*.json; done

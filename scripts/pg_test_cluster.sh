#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests and benchmarks: its own data directory under /tmp, a
# free port on 127.0.0.1, trust authentication, no effect on any system cluster.
#   eval "$(bash scripts/pg_test_cluster.sh start)"   # exports ENGRAM_TEST_PG_URL, ENGRAM_TEST_PG_DIR
#   bash scripts/pg_test_cluster.sh stop "$ENGRAM_TEST_PG_DIR"
# ENGRAM_TEST_PG_URL has no database name: tests append "/<their own database>".
set -euo pipefail

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
  echo "pg_test_cluster: PostgreSQL server binaries not found (apt install postgresql)" >&2
  exit 1
fi

# initdb refuses to run as root: run the server as the postgres system user then.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    dir=$(mktemp -d /tmp/engram-pg-XXXXXX)
    chmod 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$dir"; fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    # Sized for tests: several server processes each with a pool, two nodes at once.
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=128MB" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "export ENGRAM_TEST_PG_URL=postgresql://postgres@127.0.0.1:$port"
    echo "export ENGRAM_TEST_PG_DIR=$dir"
    ;;
  stop)
    dir="${2:?usage: pg_test_cluster.sh stop DIR}"
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_test_cluster.sh start | stop DIR" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Builds the Debian package of the server (build/engram_VERSION_ARCH.deb) with CPack, prefix /usr.
# With --smoke, also installs it on this machine (as root), starts the installed binary on its
# installed model and configuration, checks an add and a search, and removes the package again.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# The build directory's test build is reused; only the install prefix differs for the package.
cmake -S . -B build -G Ninja -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build --target engram -j "${JOBS:-2}"
rm -f build/engram_*.deb
(cd build && cpack -G DEB >/dev/null)
DEB=$(ls build/engram_*.deb)
echo "package: $DEB ($(du -h "$DEB" | cut -f1))"
dpkg-deb --info "$DEB" | sed -n 's/^ Depends: /package depends: /p'

[ "${1:-}" = "--smoke" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "package smoke test: skipped (installing the package needs root)"
  exit 0
fi
if dpkg-query -W -f='${Status}' engram 2>/dev/null | grep -q "install ok installed"; then
  echo "package smoke test: skipped (an engram package is already installed on this machine)"
  exit 0
fi
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  dpkg --purge engram >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "package smoke test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
dpkg -i "$DEB" >/dev/null
test -x /usr/bin/engram
test -f /usr/share/engram/model/model.json
test -f /etc/engram/engram.toml
test -f /usr/lib/systemd/system/engram.service
getent passwd engram >/dev/null
/usr/bin/engram version
# The installed configuration, with a throw-away data directory and a free port.
/usr/bin/engram serve --config /etc/engram/engram.toml --listen 127.0.0.1:0 \
  --data-dir "$work/data" >"$work/out" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
  grep -q "listening on" "$work/out" && break
  sleep 0.1
done
addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/out" | head -1)
if [ -z "$addr" ]; then
  cat "$work/out"
  echo "package smoke test: the installed server did not start" >&2
  exit 1
fi
curl -sf "http://$addr/leaderboard/health" >/dev/null
curl -sf "http://$addr/leaderboard/add" -d '{"request_id":"pkg-1","user_id":"pkg","session_id":"s",
  "messages":[{"role":"user","timestamp":1704067200000,"content":"I enjoy espresso after lunch"}]}' >/dev/null
answer=$(curl -sf "http://$addr/leaderboard/search" -d '{"query":"what drinks do I like?","user_id":"pkg","top_k":3}')
case "$answer" in
  *espresso*) ;;
  *) echo "package smoke test: search did not find the added message: $answer" >&2; exit 1 ;;
esac
echo "package smoke test: installed, served add and search from /usr/bin/engram with /etc/engram/engram.toml (passed)"
